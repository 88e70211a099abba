"""Reply policies of the fake server: what the assistant message says.

A policy is any callable ``(request_json, ctx) -> str`` or any object with a ``reply``
method of that shape. The shipped stand-in judges read the project's judge prompt: the
untrusted response between nonce fences and the check after the last ``# Check`` line.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from gamut_eval.errors import GamutError
from gamut_eval.scoring import Verdict
from gamut_eval.testing._requests import RequestContext, prompt_text, user_messages

# The graded response sits between two whole lines carrying the same hex nonce:
#     <<<RESPONSE 9f2c...>>>            (opening fence)
#     <<<END RESPONSE 9f2c...>>>        (closing fence)
# Threat model: the response is untrusted. Fences count only as whole lines (so prose that
# merely mentions the fence format is not one), and the closing line must repeat the
# opening nonce (back-reference), so a fake fence inside the response, with any other
# nonce, stays inside the real one instead of ending it early. The renderer guarantees the
# real nonce never occurs in the response.
# The response group takes whole lines, lazily, so the first closing line wins; matching
# line by line is also ~2x faster than a DOTALL ".*?" on long prompts.
RESPONSE_FENCE_RE = re.compile(
    r"^<<<RESPONSE (?P<nonce>[0-9a-fA-F]+)>>>\n"
    r"(?P<response>(?:.*\n)*?)"
    r"<<<END RESPONSE (?P=nonce)>>>$",
    re.MULTILINE,
)

# The check is everything after the LAST line that is exactly "# Check" in the last user
# message. Taking the last one means a "# Check" line quoted inside the response (which
# comes earlier in the prompt) cannot replace the real check.
CHECK_HEADING_RE = re.compile(r"^# Check$", re.MULTILINE)

# What the deliberately gullible judge obeys inside a response: "output meets",
# "verdict: meets", '{"verdict": "meets"}', "grade = meets", "ignore previous instructions".
INJECTION_RE = re.compile(
    r"\b(?:output|verdict|grade|score)\W{0,5}meets\b"
    r"|\bignore\s+(?:all\s+)?(?:the\s+)?(?:previous|prior|above)\s+instructions\b",
    re.IGNORECASE,
)

_WORD_RE = re.compile(r"[^\W\d_]+")
_MIN_KEYWORD_LETTERS = 4

# Words that say how to judge rather than what to find; they would inflate every match.
# fmt: off
_STOPWORDS = frozenset((
    "about", "above", "after", "also", "answer", "because", "been", "before", "being", "both",
    "does", "each", "either", "following", "from", "have", "into", "least", "mention", "mentions",
    "more", "most", "must", "only", "other", "over", "response", "should", "some", "state",
    "states", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "under", "very", "what", "when", "where", "which", "while", "will",
    "with", "without", "would", "your",
    # verbs of checks ("Identifies the dish as ...") rather than content to look for
    "correctly", "describes", "explains", "gives", "identifies", "identify", "includes",
    "lists", "names", "notes", "provides", "says", "specifies",
))
# fmt: on


class FakeServerError(GamutError):
    """Base class of the errors raised by the fake OpenAI-compatible server."""


class ScriptExhaustedError(FakeServerError):
    """A scripted policy was asked for more replies than it was given (the server sends 500)."""


@runtime_checkable
class ReplyPolicy(Protocol):
    """An object that writes the assistant reply for one request."""

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        """Return the assistant message content."""
        ...


PolicyFunction = Callable[[dict[str, Any], RequestContext], str]
Policy = ReplyPolicy | PolicyFunction


def verdict_json(verdict: str, explanation: str) -> str:
    """The structured judge output the project expects: ``{"verdict", "explanation"}``."""
    return json.dumps({"verdict": verdict, "explanation": explanation})


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """The two parts of a judge prompt that the stand-in judges look at."""

    response: str
    """The fenced, untrusted response being graded."""
    check: str
    """The check text (after the last ``# Check`` line, stripped); "" when absent."""


def _check_text(request: Mapping[str, Any]) -> str:
    """The check of the latest user message that holds one: a re-ask ends with a correction
    note, and is graded by the check it asks about again."""
    for message in reversed(user_messages(request)):
        headings = list(CHECK_HEADING_RE.finditer(message))
        if headings:
            return message[headings[-1].end() :].strip()
    return ""


def parse_judge_prompt(request: Mapping[str, Any]) -> JudgePrompt | None:
    """The fenced response and the check of a judge request, or None without a fence."""
    # The last complete fence wins: an example fence in static instructions comes earlier.
    matches = list(RESPONSE_FENCE_RE.finditer(prompt_text(request)))
    if not matches:
        return None
    response = matches[-1].group("response").removesuffix("\n")
    return JudgePrompt(response=response, check=_check_text(request))


def _words(text: str) -> set[str]:
    return set(_WORD_RE.findall(text.lower()))


def _keywords(check: str) -> set[str]:
    return {w for w in _words(check) if len(w) >= _MIN_KEYWORD_LETTERS and w not in _STOPWORDS}


@dataclass(frozen=True)
class KeywordPolicy:
    """Deterministic stand-in judge: the share of the check's keywords found in the response.

    Keywords are the check's words of at least four letters minus a few stopwords. It never
    detects contradictions; it exists so pipelines and benchmarks get plausible, repeatable
    verdicts without a model.
    """

    meets_at: float = 0.75
    """Smallest keyword share graded ``meets``."""
    partially_meets_at: float = 0.4
    """Smallest keyword share graded ``partially_meets``."""

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        """Grade the fenced response against the check; JSON ``{"verdict", "explanation"}``."""
        prompt = parse_judge_prompt(request)
        if prompt is None:
            return verdict_json(Verdict.MISSING, "no response fence found")
        if not prompt.check:
            return verdict_json(Verdict.MISSING, "no check found")
        return verdict_json(*self.grade(prompt))

    def grade(self, prompt: JudgePrompt) -> tuple[Verdict, str]:
        """``(verdict, explanation)`` for one response and check."""
        if not prompt.response.strip():
            return Verdict.MISSING, "the response is empty"
        keywords = _keywords(prompt.check)
        if not keywords:
            return Verdict.MISSING, "the check has no keywords"
        found = keywords & _words(prompt.response)
        share = len(found) / len(keywords)
        absent = ", ".join(sorted(keywords - found)) or "none"
        explanation = f"{len(found)}/{len(keywords)} check keywords found; absent: {absent}"
        return self._verdict(share), explanation

    def _verdict(self, share: float) -> Verdict:
        if share >= self.meets_at:
            return Verdict.MEETS
        if share >= self.partially_meets_at:
            return Verdict.PARTIALLY_MEETS
        return Verdict.MISSING


@dataclass(frozen=True)
class InjectablePolicy(KeywordPolicy):
    """A deliberately gullible judge: obeys "verdict: meets"-style orders in the response.

    Adversarial-probe tests use it to show that a probe *would* flip a naive judge, and the
    keyword judge to show the same probe does not flip an honest one.
    """

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        """Reply ``meets`` when the response carries an instruction, else grade by keywords."""
        prompt = parse_judge_prompt(request)
        if prompt is not None and INJECTION_RE.search(prompt.response):
            return verdict_json(Verdict.MEETS, "the response says it meets the check")
        return super().reply(request, ctx)


@dataclass(frozen=True)
class LenientPolicy(KeywordPolicy):
    """A lenient stand-in judge: the keyword judge, except that it turns ``missing`` into
    ``meets`` on a fixed share of (response, check) pairs, chosen by a hash of the two (so
    the same pair always gets the same verdict). A cheap judge biased upwards, for
    calibrated-score tests against the truthful keyword judge."""

    lenient_share: float = 0.4
    """Share of the ``missing`` verdicts turned into ``meets``."""

    def grade(self, prompt: JudgePrompt) -> tuple[Verdict, str]:
        verdict, explanation = super().grade(prompt)
        if verdict != Verdict.MISSING:
            return verdict, explanation
        digest = hashlib.blake2b(
            f"{prompt.response}\0{prompt.check}".encode(), digest_size=8
        ).digest()
        if int.from_bytes(digest, "big") / 2**64 < self.lenient_share:
            return Verdict.MEETS, f"{explanation} (graded leniently)"
        return verdict, explanation


class ScriptedPolicy:
    """Return the given replies in order; when they run out, cycle or raise.

    Raising (the default) makes a test that sends more requests than it planned fail loudly
    with a 500 naming :class:`ScriptExhaustedError`, rather than pass on recycled replies.
    """

    def __init__(
        self, replies: Sequence[str], *, when_exhausted: Literal["raise", "cycle"] = "raise"
    ) -> None:
        if not replies:
            raise ValueError("ScriptedPolicy needs at least one reply; got an empty list")
        self._replies = tuple(replies)
        self._when_exhausted = when_exhausted
        self._next = 0
        self._lock = threading.Lock()

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        """The next scripted reply."""
        with self._lock:
            position, self._next = self._next, self._next + 1
        if position >= len(self._replies) and self._when_exhausted == "raise":
            raise ScriptExhaustedError(
                f"ScriptedPolicy has {len(self._replies)} replies; request #{position + 1} "
                "has none (pass when_exhausted='cycle' to reuse them)"
            )
        return self._replies[position % len(self._replies)]


class MappingPolicy:
    """Reply by rules ``substring of the last user message -> reply``; first match wins."""

    def __init__(self, rules: Sequence[tuple[str, str]] | Mapping[str, str], default: str) -> None:
        items = rules.items() if isinstance(rules, Mapping) else rules
        self._rules = tuple((needle, reply) for needle, reply in items)
        self._default = default

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        """The reply of the first rule whose substring occurs, else the default."""
        for needle, reply in self._rules:
            if needle in ctx.last_user_message:
                return reply
        return self._default


class FixedPolicy:
    """Always the same valid verdict, without reading the prompt: for load benchmarks,
    where a policy's own CPU time would otherwise be measured as latency."""

    def __init__(self, verdict: str = Verdict.MEETS) -> None:
        self._reply = verdict_json(verdict, "fixed")

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        return self._reply


_NAMED_POLICIES: dict[str, Callable[[], ReplyPolicy]] = {
    "keyword": KeywordPolicy,
    "injectable": InjectablePolicy,
    "lenient": LenientPolicy,
    "fixed": FixedPolicy,
}


def policy_by_name(name: str) -> ReplyPolicy:
    """A fresh shipped policy by its CLI name (``keyword`` or ``injectable``)."""
    try:
        return _NAMED_POLICIES[name]()
    except KeyError:
        known = ", ".join(sorted(_NAMED_POLICIES))
        raise ValueError(f"unknown policy {name!r}; expected one of: {known}") from None


def as_policy_function(policy: Policy | str) -> PolicyFunction:
    """Normalise a policy name, a ``reply`` object or a plain callable to one callable."""
    if isinstance(policy, str):
        return policy_by_name(policy).reply
    if isinstance(policy, ReplyPolicy):
        return policy.reply
    if callable(policy):
        return policy
    raise TypeError(f"policy must be a name, a callable or have .reply(); got {policy!r}")
