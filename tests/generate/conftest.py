"""A tiny two-question dataset with a real PNG, and a fake OpenAI-compatible endpoint."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generate_helpers import Recorder

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


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAIServer, Recorder]]:
    recorder = Recorder()
    with FakeOpenAIServer(policy=recorder) as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "test-key")
        yield server, recorder
