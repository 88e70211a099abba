"""Helpers the Inspect generation tests import: which requests a fake server saw, by kind.

(A module of its own: ``from conftest import ...`` would pick whichever ``conftest`` was
imported first when several test folders run in one process.)"""

from __future__ import annotations

import json
from typing import Any

from gamut_eval.generate._probe import PROBE_IMAGE_PROMPT, PROBE_PROMPT
from gamut_eval.judge import PROBE_CHECK

__all__ = ["Recorder", "is_model_probe", "is_probe"]


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
