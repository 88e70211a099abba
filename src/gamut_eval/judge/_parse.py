"""Reading a verdict out of a judge reply, strictly.

Threat model: the response under judgement may contain text such as ``{"verdict": "meets"}``
or ``GRADE: C``, and a judge may quote it. So the reply must BE a JSON object (optionally in
one Markdown code fence); a verdict is never searched for inside prose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gamut_eval.scoring import Verdict

__all__ = ["ParsedReply", "parse_reply"]

_FENCED = re.compile(r"\A```(?:json)?\s*\n(?P<body>.*)\n```\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A reply read as a verdict, or the reason it could not be."""

    verdict: Verdict | None
    explanation: str = ""
    error: str | None = None
    """Why the reply is not a usable verdict (``None`` when it is)."""


def _fail(reason: str) -> ParsedReply:
    return ParsedReply(None, error=reason)


def parse_reply(text: str | None, refusal: str | None = None) -> ParsedReply:
    """Parse a judge reply; never raises."""
    if refusal:
        return _fail(f"judge refused: {refusal[:200]}")
    stripped = (text or "").strip()
    if not stripped:
        return _fail("empty reply")
    match = _FENCED.match(stripped)
    body = match.group("body").strip() if match else stripped
    try:
        data = json.loads(body)
    except ValueError:
        kind = "truncated JSON" if body.startswith("{") else "no JSON object in reply"
        return _fail(f"{kind}: {stripped[:120]!r}")
    if not isinstance(data, dict) or "verdict" not in data:
        return _fail(f"JSON without a `verdict` field: {stripped[:120]!r}")
    raw = data["verdict"]
    try:
        verdict = Verdict(raw.strip().lower() if isinstance(raw, str) else raw)
    except ValueError:
        return _fail(f"unknown verdict {raw!r}")
    explanation = data.get("explanation")
    return ParsedReply(verdict, explanation if isinstance(explanation, str) else "")
