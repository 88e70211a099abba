"""Shared builders for the construction tests: a scripted Inspect ``mockllm``, images, a corpus.

The ``Responder`` is mockllm's ``custom_outputs`` callable: it recognises which prompt it was
sent (by its system message), records the call, and answers with that kind's handler, so
tests script replies by kind rather than by the order concurrent units happen to run in.
Every reply carries its usage: without it mockllm counts tokens with tiktoken, which
downloads its encoding (these tests are offline).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.model import ContentImage, Model, ModelOutput, ModelUsage, get_model

from gamut_eval.construct import AcceptedQuestion, Provenance, Workdir
from gamut_eval.construct._prompts import (
    AUDIT_SYSTEM,
    DRAFT_SYSTEM,
    QUERIES_SYSTEM,
    QUESTIONS_SYSTEM,
    REBUILD_SYSTEM,
    REVIEW_SYSTEM,
    SAME_QUESTION_SYSTEM,
    TEXT_ONLY_SYSTEM,
)

CORPUS = Path(__file__).parent / "corpus"

# A 1x1 red PNG (and a blue one, so the two images hash differently).
RED_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
BLUE_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPj/HwADBwIAMCbHYQAAAABJRU5ErkJggg=="
)

KINDS = {
    QUESTIONS_SYSTEM: "questions",
    REVIEW_SYSTEM: "review",
    QUERIES_SYSTEM: "queries",
    DRAFT_SYSTEM: "draft",
    AUDIT_SYSTEM: "audit",
    REBUILD_SYSTEM: "rebuild",
    TEXT_ONLY_SYSTEM: "text_only",
    SAME_QUESTION_SYSTEM: "same",
}

_FENCE = re.compile(r"([^\n]*):\n<<<DATA (\w+)>>>\n(.*?)\n<<<END DATA \2>>>", re.DOTALL)


@dataclass
class Call:
    """One model call as the mock saw it."""

    kind: str
    system: str
    turns: list[str]
    """Text of every user turn: the request, then one per repair."""
    replies: list[str]
    """The assistant turns replayed before this call (the rejected replies)."""
    images: int
    schema: Any = None
    """The structured-output schema sent (Inspect's ``ResponseSchema``), if any."""

    @property
    def user(self) -> str:
        return self.turns[0]

    @property
    def repairs(self) -> int:
        return len(self.turns) - 1

    def data(self, label: str) -> Any:
        """The fenced JSON payload whose label starts with ``label``."""
        for match in _FENCE.finditer(self.user):
            if match.group(1).startswith(label):
                return json.loads(match.group(3))
        raise KeyError(label)


Handler = Callable[[Call], "str | ModelOutput"]


def reply(text: str) -> ModelOutput:
    output = ModelOutput.from_content(model="mockllm/model", content=text)
    output.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
    return output


def _questions(call: Call) -> str:
    count = int(re.search(r"exactly (\d+)", call.user).group(1))  # type: ignore[union-attr]
    forms = [
        "What is this and how is it usually made?",
        "Where does this come from and how has it changed over time?",
        "What variations of this exist and how do they differ?",
        "How should I enjoy this, and what is it traditionally served with?",
        "What makes this different from similar things nearby?",
    ]
    return json.dumps({"candidates": [{"question": q, "aspect": "x"} for q in forms[:count]]})


def _review(call: Call) -> str:
    try:
        candidates = call.data("Candidates")
    except KeyError:
        candidates = []
    reviews = [
        {"candidate_id": c["candidate_id"], "passes": True, "failures": [], "boilerplate": False}
        for c in candidates
    ]
    ranking = [c["candidate_id"] for c in candidates]
    new = [] if candidates else ["What is this, and how did it become so popular?"]
    return json.dumps({"reviews": reviews, "ranking": ranking, "new_candidates": new})


def _queries(call: Call) -> str:
    entity = call.data("Question")["entity"] or "thing"
    return json.dumps({"queries": [f"{entity} toppings", f"{entity} stone bowl variant"]})


def _draft(call: Call) -> str:
    snippets = call.data("Evidence snippets")
    item = {
        "id": "identity",
        "type": "fact",
        "tier": "answer_critical",
        "statement": "Identifies the entity.",
        "cites": [snippets[0]["id"]],
    }
    return json.dumps({"items": [item]})


def _audit(call: Call) -> str:
    return json.dumps({"partial": [], "drop": []})


def _rebuild(call: Call) -> str:
    return json.dumps({"items": call.data("Draft items"), "dropped": []})


def _text_only(call: Call) -> str:
    payload = call.data("Question and entity")
    question, entity = payload["question"], payload["entity"]
    rewritten = (
        question.replace("this", entity, 1) if "this" in question else f"{entity}: {question}"
    )
    return json.dumps({"question_text_only": rewritten})


def _same(call: Call) -> str:
    return json.dumps({"same": True, "reason": "Both ask for the same explanation."})


DEFAULTS: dict[str, Callable[[Call], str]] = {
    "questions": _questions,
    "review": _review,
    "queries": _queries,
    "draft": _draft,
    "audit": _audit,
    "rebuild": _rebuild,
    "text_only": _text_only,
    "same": _same,
}


@dataclass
class Responder:
    """mockllm ``custom_outputs``: answers by prompt kind and records every call.

    ``handlers`` override the defaults per kind; a kind mapped to a list replays the list
    in order (strings), then falls back to the default. ``forbid=True`` fails any call
    (resume tests: a second run must make none).
    """

    handlers: dict[str, Handler | list[str]] = field(default_factory=dict)
    forbid: bool = False
    calls: list[Call] = field(default_factory=list)
    probes: int = 0
    """The probes answered (one tiny request before a stage that has a model)."""

    def __call__(self, input: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        if _is_probe(input):  # the probe before a stage: answered, not counted as a call
            self.probes += 1
            return reply("red")
        call = _call(input)
        call.schema = config.response_schema
        self.calls.append(call)
        if self.forbid:
            raise AssertionError(f"unexpected model call ({call.kind})")
        handler = self.handlers.get(call.kind, DEFAULTS[call.kind])
        if isinstance(handler, list):
            text: str | ModelOutput = handler.pop(0) if handler else DEFAULTS[call.kind](call)
        else:
            text = handler(call)
        return text if isinstance(text, ModelOutput) else reply(text)

    def model(self) -> Model:
        return get_model("mockllm/model", custom_outputs=self, memoize=False)

    def of(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.kind == kind]


def _is_probe(messages: list[Any]) -> bool:
    """The probe is one user turn; every call of a stage has its system prompt first."""
    return len(messages) == 1 and messages[0].role == "user"


def _call(messages: list[Any]) -> Call:
    system = messages[0].text
    users = [m for m in messages[1:] if m.role == "user"]
    images = sum(
        1
        for m in users
        if isinstance(m.content, list)
        for c in m.content
        if isinstance(c, ContentImage)
    )
    return Call(
        kind=KINDS.get(system, "unknown"),
        system=system,
        turns=[m.text for m in users],
        replies=[m.text for m in messages[1:] if m.role == "assistant"],
        images=images,
    )


def make_images(root: Path) -> Path:
    """Two images and a manifest naming their entities; returns the manifest."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bowl.png").write_bytes(RED_PNG)
    (root / "tower.png").write_bytes(BLUE_PNG)
    rows = [
        {"image": "bowl.png", "entity": "Bibimbap", "domain": "food", "popularity": "head"},
        {"image": "tower.png", "entity": "Eiffel Tower", "domain": "places"},
    ]
    manifest = root / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return manifest


def copy_corpus(root: Path) -> Path:
    """A copy of the shipped corpus that a test may edit."""
    target = root / "corpus"
    shutil.copytree(CORPUS, target)
    return target


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def provenance(stage: str = "test") -> Provenance:
    return Provenance(stage=stage, model="mockllm/model", prompt_version="v", inputs={}, key="k")


def accepted(image: Path, qid: str = "bowl", **fields: Any) -> AcceptedQuestion:
    """An accepted question about ``image`` (Bibimbap unless told otherwise)."""
    values: dict[str, Any] = {
        "id": qid,
        "image_id": qid,
        "image": str(image),
        "image_sha256": "0" * 64,
        "question": "What is this dish and what goes on it?",
        "candidate_id": f"{qid}-c1",
        "entity": "Bibimbap",
        "domain": "food",
        "provenance": provenance("review"),
    }
    return AcceptedQuestion.model_validate({**values, **fields})


def seed(workdir: Path, name: str, rows: list[Any]) -> None:
    """Write a stage file as an earlier stage would have."""
    Workdir(workdir).write(name, rows)
