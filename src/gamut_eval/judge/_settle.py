"""The one place where a judge reply becomes a stored row.

Every backend hands its replies to ``settle``: the online clients after each call, the
batch backend when a results file comes back hours later, Ray actors on their workers.
The rules are therefore the same everywhere: the reply is read strictly (``parse_reply``);
a reply that is not a valid verdict is re-asked with the conversation so far, at most
``max_reasks`` times; after that, or after a failed call, the check is **unscored** with
the reason, never ``missing`` (docs/method.md, unscored checks). Errors are never cached:
the store counts only successful verdicts as done, so the next run retries them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gamut_eval.judge._parse import parse_reply
from gamut_eval.judge._prompt import PROMPT_VERSION
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import ChatMessage, Completion

__all__ = ["REASK", "Outcome", "Reask", "request_messages", "settle"]

REASK = (
    "Your previous reply was not a valid verdict ({error}). Reply again with only the JSON "
    'object {{"explanation": "...", "verdict": "meets" | "partially_meets" | "missing" | '
    '"contradicts"}} for the same check.'
)

Outcome = Completion | str
"""What one attempt produced: the judge's reply, or the reason there was none."""


@dataclass(frozen=True, slots=True)
class Reask:
    """A check whose replies so far were not valid verdicts: what the next attempt sends."""

    key: str
    history: tuple[tuple[str, str], ...]
    """(bad reply, parse error) per attempt so far, oldest first."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    result_id: str = ""
    """Id of the batch result line that produced the last reply, so ingesting the same
    results file twice does not count one reply as two attempts."""
    latency_s: float = 0.0
    """Wall time of the attempts so far (online backends)."""

    @property
    def attempts(self) -> int:
        return len(self.history)


def request_messages(first: list[ChatMessage], reask: Reask | None) -> list[ChatMessage]:
    """The messages of the next attempt: the first ask, then each bad reply and correction."""
    if reask is None:
        return first
    messages = list(first)
    for reply, error in reask.history:
        messages.append({"role": "assistant", "content": reply})
        messages.append({"role": "user", "content": REASK.format(error=error[:200])})
    return messages


def settle(
    key: str,
    outcome: Outcome,
    prior: Reask | None,
    settings: JudgeSettings,
    result_id: str = "",
) -> StoredVerdict | Reask:
    """One attempt's outcome -> the stored verdict, or the re-ask to send next.

    A failure reason (``str``) is unscored at once; a malformed reply is re-asked until
    ``settings.max_reasks`` re-asks were spent, then unscored with the parse error.
    """
    usage = _usage(prior, outcome)
    attempts = (prior.attempts if prior else 0) + 1
    if isinstance(outcome, str):
        return _verdict(key, settings, None, "", outcome, attempts, usage)
    parsed = parse_reply(outcome.text, outcome.refusal)
    if parsed.verdict is not None:
        return _verdict(
            key, settings, parsed.verdict.value, parsed.explanation, None, attempts, usage
        )
    error = parsed.error or "invalid reply"
    if attempts <= settings.max_reasks:
        history = (*(prior.history if prior else ()), (outcome.text, error))
        return Reask(key, history, *usage[:3], result_id=result_id, latency_s=usage[3])
    reason = f"unparseable: {error} (after {settings.max_reasks + 1} attempts)"
    return _verdict(key, settings, None, "", reason, attempts, usage)


def _usage(prior: Reask | None, outcome: Outcome) -> tuple[int, int, int, float]:
    base = (
        (prior.prompt_tokens, prior.completion_tokens, prior.cached_tokens, prior.latency_s)
        if prior
        else (0, 0, 0, 0.0)
    )
    if isinstance(outcome, str):
        return base
    return (
        base[0] + outcome.prompt_tokens,
        base[1] + outcome.completion_tokens,
        base[2] + outcome.cached_tokens,
        base[3] + outcome.latency_s,
    )


def _verdict(
    key: str,
    settings: JudgeSettings,
    verdict: str | None,
    explanation: str,
    reason: str | None,
    attempts: int,
    usage: tuple[int, int, int, float],
) -> StoredVerdict:
    return StoredVerdict(
        key=key,
        judge=settings.judge,
        prompt_version=PROMPT_VERSION,
        verdict=verdict,
        explanation=explanation,
        status="ok" if verdict is not None else "unscored",
        reason=reason,
        attempts=attempts,
        prompt_tokens=usage[0],
        completion_tokens=usage[1],
        cached_tokens=usage[2],
        latency_ms=usage[3] * 1000,
        created_at=time.time(),
    )
