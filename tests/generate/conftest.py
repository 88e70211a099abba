"""A tiny two-question dataset with a real PNG, and a fake OpenAI-compatible endpoint."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gamut_eval.generate._probe import PROBE_IMAGE_PROMPT, PROBE_PROMPT
from gamut_eval.judge._probe import PROBE_CHECK
from gamut_eval.testing import FakeOpenAIServer

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def meta(qid: str) -> dict[str, Any]:
    return {
        "id": qid,
        "question": f"What is the thing in this photo ({qid}) and what is it made of?",
        "items": [
            {
                "id": "identity",
                "type": "fact",
                "tier": "answer_critical",
                "statement": "Identifies the red square.",
            },
            {
                "id": "parts",
                "type": "strict_list",
                "tier": "valuable",
                "name": "materials",
                "items": ["red paint", "canvas"],
            },
        ],
    }


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    (tmp_path / "img.png").write_bytes(PNG)
    rows = []
    for qid in ("q-1", "q-2"):
        m = meta(qid)
        rows.append(
            {
                "id": qid,
                "question": m["question"],
                "question_text_only": f"What is the red square {qid} and what is it made of?",
                "entity": "red square",
                "image": "img.png",
                "meta_rubric": m,
            }
        )
    path = tmp_path / "dataset.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def is_probe(body: dict[str, Any]) -> bool:
    """Whether a request is the judge probe a run sends before any work."""
    return str(body["messages"][-1].get("content", "")).endswith(PROBE_CHECK)


def is_model_probe(body: dict[str, Any]) -> bool:
    """Whether a request is the answering models' probe a run sends before generating."""
    content = body["messages"][-1].get("content", "")
    parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return texts in ([PROBE_PROMPT], [PROBE_IMAGE_PROMPT])


def _is_judged(body: dict[str, Any]) -> bool:
    """Whether a request is the judge's (its system prompt grades a rubric check)."""
    system = body["messages"][0]
    return system.get("role") == "system" and "rubric check" in str(system.get("content"))


class Recorder:
    """A fake-server policy that keeps every request body and answers by kind of prompt."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.judge_reply = json.dumps({"explanation": "fine", "verdict": "meets"})

    def __call__(self, request: dict[str, Any], ctx: object) -> str:
        self.bodies.append(request)
        if _is_judged(request):
            return self.judge_reply
        return "It is a red square painted on canvas with red paint."

    def judge_requests(self) -> list[dict[str, Any]]:
        """The judge's requests for checks (the probe before a run left out)."""
        judged = [b for b in self.bodies if b["messages"][0].get("role") == "system"]
        return [b for b in judged if not is_probe(b)]

    def probe_requests(self) -> list[dict[str, Any]]:
        """The judge probe's requests."""
        return [b for b in self.bodies if is_probe(b)]

    def model_probe_requests(self) -> list[dict[str, Any]]:
        """The answering models' probe requests."""
        return [b for b in self.bodies if is_model_probe(b)]

    def answer_requests(self) -> list[dict[str, Any]]:
        """The answering models' requests for answers (their probe left out)."""
        return [b for b in self.bodies if not _is_judged(b) and not is_model_probe(b)]

    def answers_and_checks(self) -> list[dict[str, Any]]:
        """Every request but the probes (of the judges and of the answering models)."""
        return [b for b in self.bodies if not is_probe(b) and not is_model_probe(b)]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAIServer, Recorder]]:
    recorder = Recorder()
    with FakeOpenAIServer(policy=recorder) as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "test-key")
        yield server, recorder
