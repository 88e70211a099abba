"""Recorded provider replies for the construction tests, replayed by ``ReplayServer``.

``tests/construct/wire/`` holds replies in the shapes the providers document (OpenAI chat
completions with structured outputs, a refusal and a reply cut at ``length``; llama.cpp's
server refusing ``json_schema``; Anthropic tool use, ``max_tokens`` and ``refusal`` stops;
Tavily and Brave search results and errors). ``{{reply}}`` in a recording is filled with
what the scripted stand-in (``construct_helpers.DEFAULTS``) answers to the request, so the
envelope is the provider's and the content fits the stage.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from construct_helpers import DEFAULTS, KINDS, Call

from gamut_eval.testing import Recorded, ReplayedRequest, fill, load_recording

WIRE = Path(__file__).parent / "wire"


def recording(name: str) -> Recorded:
    """``wire/<name>.json``."""
    return load_recording(WIRE / f"{name}.json")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _images(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(
        1 for p in content if isinstance(p, dict) and p.get("type") in ("image_url", "image")
    )


def call_of(body: dict[str, Any]) -> Call:
    """The stand-in's view of an OpenAI or Anthropic request body."""
    messages = body.get("messages", [])
    if "system" in body:  # Anthropic: the system prompt beside the messages
        system = _text(body["system"])
    else:
        system, messages = _text(messages[0]["content"]), messages[1:]
    users = [m for m in messages if m.get("role") == "user"]
    return Call(
        kind=KINDS.get(system, "unknown"),
        system=system,
        turns=[_text(m.get("content")) for m in users],
        replies=[_text(m.get("content")) for m in messages if m.get("role") == "assistant"],
        images=sum(_images(m.get("content")) for m in users),
    )


Fault = Callable[[Call, str], Any]
"""Given the call and the stand-in's reply: the recording to answer with (or None)."""


class Wire:
    """The reply policy of a replayed provider: the stand-in's answer in ``envelope``,
    except where ``faults`` (kind -> function of the call) say otherwise."""

    def __init__(self, envelope: str, faults: dict[str, Fault] | None = None) -> None:
        self.envelope = recording(envelope)
        self.faults = faults or {}
        self.calls: list[tuple[Call, dict[str, Any]]] = []

    def __call__(self, request: ReplayedRequest) -> Recorded:
        body = request.body if isinstance(request.body, dict) else {}
        call = call_of(body)
        self.calls.append((call, body))
        answer = DEFAULTS[call.kind](call)
        fault = self.faults.get(call.kind)
        chosen = fault(call, answer) if fault is not None else None
        if isinstance(chosen, Recorded):
            return chosen
        return fill(self.envelope, answer if chosen is None else chosen)

    def of(self, kind: str) -> list[tuple[Call, dict[str, Any]]]:
        return [c for c in self.calls if c[0].kind == kind]


def drifted(answer: str, how: str) -> str:
    """Valid JSON that drifts from the reply's schema: a field ``missing``, an ``extra``
    one, or the first field ``wrong``-typed."""
    data = json.loads(answer)
    first = next(iter(data))
    if how == "missing":
        data.pop(first)
    elif how == "extra":
        data["confidence"] = "high"
        value = data[first]
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value[0]["rationale"] = "because"
    else:
        data[first] = 42 if not isinstance(data[first], int | float) else "forty-two"
    return json.dumps(data)
