"""The offline judge: deterministic, no network, a low-fidelity stand-in for an LLM judge.

``grade_check`` grades a response against a ``Check`` with the structure the compiler put on
it (``target``, ``options``, ``at_least``): for "mentions at least N of the following" it
counts the listed options the response names; for an ordered sequence it compares the order
in which the steps are described; for everything else it looks for the content words of
what the check asks for. A check without that data (written or edited by hand) is graded
on the content words of its text. It cannot know facts, so the only contradiction it finds
is steps in the wrong order. Its one threshold (``MEETS_AT``) is fitted on the tuning half
of the sample's reference labels (``data.TUNING_QUESTIONS``); its agreement with the
held-out half is measured by the test suite and stated in the README. The ``offline`` backend
(``backends/_offline.py``) hands it each answer and check directly: no prompt is rendered,
so nothing in an answer can change which check is graded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gamut_eval.rubric import Check

__all__ = ["OFFLINE_JUDGE", "grade_check"]

OFFLINE_JUDGE = "gamut/offline"

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

MEETS_AT = 0.45
"""Share of a check's content words the response must contain: of the grid 0.30, 0.35, ...,
0.80, the value with the highest Cohen's kappa on the reference labels of the sample's
tuning half (``quality.fit_meets_at``; a test refits it). A band of "partially meets"
below it lowered agreement: word overlap cannot tell an imprecise statement from an
unrelated one."""


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


def _by_coverage(response: _Response, text: str, meets_at: float) -> tuple[str, str]:
    key = _content(text)
    if not key:
        return "missing", "nothing to look for"
    covered = response.coverage(key)
    verdict = "meets" if covered >= meets_at else "missing"
    return verdict, f"{covered:.0%} of the key words found"


def _threshold(
    response: _Response, n: int, options: Sequence[str], meets_at: float
) -> tuple[str, str]:
    named = [o for o in options if _present(response, o) >= meets_at]
    verdict = "meets" if len(named) >= n else "missing"
    return verdict, f"names {len(named)} listed options (needs {n})"


def _sequence(response: _Response, steps: Sequence[str], meets_at: float) -> tuple[str, str]:
    keys = [_content(s) for s in steps]
    # Words shared by several steps say nothing about where one step is mentioned.
    counts: dict[str, int] = {}
    for key in keys:
        for word in key:
            counts[word] = counts.get(word, 0) + 1
    positions: list[int | None] = []
    for step, key in zip(steps, keys, strict=True):
        distinctive = [w for w in key if counts[w] == 1] or key
        if _present(response, step) < meets_at:
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


def grade_check(response_text: str, check: Check, *, meets_at: float = MEETS_AT) -> tuple[str, str]:
    """Verdict and explanation for one check, from its structured data; deterministic.

    A threshold or coverage check counts the ``options`` the response names against
    ``at_least``; a sequence check compares the order of its ``options`` (the steps); any
    other check looks for the content words of its ``target``. A check without structured
    data (a hand-written or edited one) is graded on the content words of its ``text``.
    ``meets_at``: the share of content words that counts as present (fitting it is the
    only reason to pass another value).
    """
    response = _Response.of(response_text)
    if not response.tokens:
        return "missing", "empty response"
    kind = str(check.kind)
    if kind in _THRESHOLDS and check.options and check.at_least is not None:
        return _threshold(response, check.at_least, check.options, meets_at)
    if kind in _SEQUENCES and check.options:
        return _sequence(response, check.options, meets_at)
    return _by_coverage(
        response, check.target if check.target is not None else check.text, meets_at
    )
