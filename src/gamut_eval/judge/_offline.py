"""The offline judge: deterministic, no network, a low-fidelity stand-in for an LLM judge.

``grade_check`` grades a response against a ``Check`` with the structure the compiler put on
it (``target``, ``options``, ``at_least``): for "mentions at least N of the following" it
counts the listed options the response names; for an ordered sequence it compares the order
in which the steps are described; for everything else it looks for the content words of
what the check asks for. A check without that data (written or edited by hand) is graded
on the content words of its text.

``OfflineExecutor`` still reads the rendered request every backend receives, so it sees
only the check's text and recovers its structure from the compiler's sentences (``grade``);
on compiled checks the two give the same verdicts (a test compares them on the sample). It
cannot know facts, so the only contradiction it finds is steps in the wrong order. Its
agreement with the hand-labelled gold verdicts of the bundled sample is measured by the
test suite and stated in the README.

Threat model: the response is read only from between the nonce fences and the check only
after the last ``# Check`` line, so text in the response cannot change what is graded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gamut_eval.judge._types import ChatMessage, Completion

if TYPE_CHECKING:
    from gamut_eval.rubric import Check

__all__ = ["OFFLINE_JUDGE", "OfflineExecutor", "grade", "grade_check"]

OFFLINE_JUDGE = "gamut/offline"

_FENCE = re.compile(
    r"^<<<RESPONSE (?P<nonce>[0-9a-f]+)>>>\n(?P<body>(?:.*\n)*?)<<<END RESPONSE (?P=nonce)>>>$",
    re.MULTILINE,
)
_CHECK = re.compile(r"^# Check\n", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
# fmt: off
_STOP = frozenset((
    "a", "an", "the", "of", "and", "or", "to", "in", "on", "at", "by", "for", "with", "as", "is",
    "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those",
    "from", "into", "than", "then", "there", "their", "them", "they", "which", "who", "whom",
    "whose", "what", "when", "where", "how", "why", "about", "also", "very", "more", "most",
    "such", "other", "some", "any", "each", "both", "either", "usually", "often", "typically",
    "commonly", "generally", "can", "may", "might", "one", "two", "mentions", "mention", "names",
    "identifies", "identify", "states", "state", "explains", "explain", "notes", "note",
    "describes", "describe", "says", "say", "gives", "give", "answer", "response", "least",
    "following", "among", "related", "entity", "presents", "these", "steps", "relative", "order",
    "step", "part", "parts",
))
# fmt: on

_THRESHOLD = re.compile(
    r"^Mentions at least (?P<n>\d+) of the following (?P<name>.+?): (?P<options>.+)\.$", re.S
)
_SEQUENCE = re.compile(
    r"^Presents these steps of (?P<name>.+?) in this relative order: (?P<steps>.+)\.$", re.S
)
_LIST_ITEM = re.compile(r"^Mentions (?P<key>.+) as one of the (?P<name>.+)\.$", re.S)
_OPTION = re.compile(r"^Mentions (?P<key>.+) among the (?P<name>.+)\.$", re.S)
_STEP = re.compile(r"^Describes this step of (?P<name>.+?): (?P<key>.+)\.$", re.S)
_ENTITY = re.compile(r"^Identifies the related entity (?P<key>.+) \((?P<relation>.+)\)\.$", re.S)
_ASPECT = re.compile(
    r"^About (?P<entity>.+) \((?P<relation>.+)\), states that (?P<key>.+)\.$", re.S
)
_NUMBERED = re.compile(r"\(\d+\) ")

MEETS_AT = 0.5
"""Share of a check's content words the response must contain. Chosen on the bundled
sample's gold verdicts, where a band of "partially meets" below it lowered agreement: word
overlap cannot tell an imprecise statement from an unrelated one."""


def _stem(word: str) -> str:
    """A crude stem: long words compared on their first six letters ("originated" and
    "origins" both give "origin"), plural s dropped from short ones."""
    if len(word) > 6:
        return word[:6]
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _words(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def _content(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in _words(text):
        if word not in _STOP and (len(word) > 2 or word.isdigit()):
            seen[word] = None
    return list(seen)


@dataclass(frozen=True)
class _Response:
    tokens: list[str]
    vocabulary: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _Response:
        tokens = _words(text)
        return cls(tokens, frozenset(tokens))

    def coverage(self, key: Sequence[str]) -> float:
        return sum(w in self.vocabulary for w in key) / len(key) if key else 0.0

    def located(self, key: Sequence[str], window: int = 30) -> int | None:
        """Where ``key`` is described: the first position from which at least half of its
        words occur within ``window`` tokens (a lone early mention does not count)."""
        wanted = set(key)
        need = max(1, (len(wanted) + 1) // 2)
        hits = [i for i, t in enumerate(self.tokens) if t in wanted]
        for start in hits:
            found = {self.tokens[i] for i in hits if start <= i < start + window}
            if len(found) >= need:
                return start
        return None


def _present(response: _Response, text: str) -> float:
    return response.coverage(_content(text))


def _by_coverage(response: _Response, text: str) -> tuple[str, str]:
    key = _content(text)
    if not key:
        return "missing", "nothing to look for"
    covered = response.coverage(key)
    verdict = "meets" if covered >= MEETS_AT else "missing"
    return verdict, f"{covered:.0%} of the key words found"


def _threshold(response: _Response, n: int, options: Sequence[str]) -> tuple[str, str]:
    named = [o for o in options if _present(response, o) >= MEETS_AT]
    verdict = "meets" if len(named) >= n else "missing"
    return verdict, f"names {len(named)} listed options (needs {n})"


def _sequence(response: _Response, steps: Sequence[str]) -> tuple[str, str]:
    keys = [_content(s) for s in steps]
    # Words shared by several steps say nothing about where one step is mentioned.
    counts: dict[str, int] = {}
    for key in keys:
        for word in key:
            counts[word] = counts.get(word, 0) + 1
    positions: list[int | None] = []
    for step, key in zip(steps, keys, strict=True):
        distinctive = [w for w in key if counts[w] == 1] or key
        if _present(response, step) < MEETS_AT:
            positions.append(None)
        else:
            positions.append(response.located(distinctive))
    found = [p for p in positions if p is not None]
    if len(found) < len(steps):
        if len(found) >= max(2, len(steps) // 2) and found == sorted(found):
            return "partially_meets", f"{len(found)} of {len(steps)} steps found, in order"
        return "missing", f"{len(found)} of {len(steps)} steps found"
    if found == sorted(found):
        return "meets", "every step found, in this order"
    return "contradicts", "every step found, but not in this order"


_THRESHOLDS = frozenset(("list_threshold", "coverage_threshold"))
_SEQUENCES = frozenset(("sequence", "sequence_full"))


def grade_check(response_text: str, check: Check) -> tuple[str, str]:
    """Verdict and explanation for one check, from its structured data; deterministic.

    A threshold or coverage check counts the ``options`` the response names against
    ``at_least``; a sequence check compares the order of its ``options`` (the steps); any
    other check looks for the content words of its ``target``. A check without structured
    data (a hand-written or edited one) is graded on the content words of its ``text``.
    """
    response = _Response.of(response_text)
    if not response.tokens:
        return "missing", "empty response"
    kind = str(check.kind)
    if kind in _THRESHOLDS and check.options and check.at_least is not None:
        return _threshold(response, check.at_least, check.options)
    if kind in _SEQUENCES and check.options:
        return _sequence(response, check.options)
    return _by_coverage(response, check.target if check.target is not None else check.text)


def grade(response_text: str, check: str) -> tuple[str, str]:
    """Verdict and explanation for a check known only by its text; deterministic.

    The structure is recovered from the compiler's sentences. Prefer ``grade_check``, which
    reads it from the ``Check``; this serves ``OfflineExecutor``, which sees rendered text.
    """
    response = _Response.of(response_text)
    if not response.tokens:
        return "missing", "empty response"
    check = " ".join(check.split())
    if match := _THRESHOLD.match(check):
        return _threshold(response, int(match["n"]), match["options"].split("; "))
    if match := _SEQUENCE.match(check):
        steps = [s.rstrip("; ").strip() for s in _NUMBERED.split(match["steps"]) if s.strip()]
        return _sequence(response, steps)
    for pattern in (_LIST_ITEM, _OPTION, _STEP, _ENTITY, _ASPECT):
        if match := pattern.match(check):
            return _by_coverage(response, match["key"])
    return _by_coverage(response, check)


def _user_text(messages: list[ChatMessage]) -> str:
    content = messages[-1]["content"] if messages else ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


class OfflineExecutor:
    """An ``Executor`` that grades locally with ``grade``; no network, instant."""

    judge_id = OFFLINE_JUDGE

    async def complete(
        self, messages: list[ChatMessage], response_format: dict[str, Any] | None
    ) -> Completion:
        start = time.perf_counter()
        text = _user_text([m for m in messages if m.get("role") == "user"][:1])
        fence = _FENCE.search(text)
        checks = list(_CHECK.finditer(text))
        if fence is None or not checks:
            verdict, why = "missing", "no fenced response or no check found"
        else:
            verdict, why = grade(fence["body"], text[checks[-1].end() :])
        reply = json.dumps({"explanation": why, "verdict": verdict})
        return Completion(
            reply,
            prompt_tokens=len(text) // 4,
            completion_tokens=len(reply) // 4,
            latency_s=time.perf_counter() - start,
        )

    async def aclose(self) -> None:
        return None
