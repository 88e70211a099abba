"""Judging in rounds: one request per check per round, re-asks in the next round.

The online engine re-asks a malformed verdict at once, inside ``judge_one``. Backends that
send requests in bulk (provider batch files, vLLM engines under Ray Data) cannot: the bad
reply comes back with thousands of others, hours later. They settle every reply with
``settle`` below, which applies ``judge_one``'s rules exactly: the same ``parse_reply``,
the same re-ask turn (``REASK``), the same bound (``max_reasks``), the same unscored
reasons. A malformed reply becomes a ``Reask`` carrying the conversation so far, and the
next round sends that conversation, as ``judge_one`` would have.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from gamut_eval.judge._engine import REASK
from gamut_eval.judge._fast import _error_fields, _text_of
from gamut_eval.judge._parse import parse_reply
from gamut_eval.judge._prompt import PROMPT_VERSION, RESPONSE_FORMAT
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import ChatMessage, Completion

__all__ = [
    "Reask",
    "completion_from_body",
    "error_reason",
    "request_body",
    "request_messages",
    "settle",
]


@dataclass(frozen=True, slots=True)
class Reask:
    """A check whose replies so far were not valid verdicts: what the next round sends."""

    key: str
    history: tuple[tuple[str, str], ...]
    """(bad reply, parse error) per attempt so far, oldest first."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    result_id: str = ""
    """Id of the result line that produced the last reply, so ingesting the same results
    file twice does not count one reply as two attempts."""

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


def request_body(
    model_name: str, messages: list[ChatMessage], settings: JudgeSettings
) -> dict[str, Any]:
    """The chat-completions body, field for field what the fast executor sends."""
    body: dict[str, Any] = {
        "model": model_name,
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.structured_output:
        body["response_format"] = RESPONSE_FORMAT
    return body


def error_reason(status: int, payload: Any) -> str:
    """The unscored reason for a non-200 reply inside a batch, worded as the fast executor
    words it (content-policy refusals named as such)."""
    message, kind = _error_fields(json.dumps(payload).encode())
    if "content_policy" in kind or "content_filter" in kind:
        return f"content policy: {message}"
    return f"HTTP {status}: {message}"


def completion_from_body(body: Any) -> Completion | str:
    """A chat-completion body as a ``Completion``, or the reason it cannot be one."""
    try:
        choice = body["choices"][0]
        message = choice["message"]
        text = _text_of(message.get("content"))
    except (LookupError, TypeError, AttributeError):
        return f"the judge endpoint sent an unusable reply: {json.dumps(body)[:200]}"
    if choice.get("finish_reason") == "content_filter":
        return (
            "content policy: the provider filtered the judge's reply (finish_reason=content_filter)"
        )
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    refusal = message.get("refusal")
    return Completion(
        text=text,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=_int(details.get("cached_tokens")),
        refusal=refusal if isinstance(refusal, str) else None,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def settle(
    key: str,
    outcome: Completion | str,
    prior: Reask | None,
    settings: JudgeSettings,
    result_id: str = "",
) -> StoredVerdict | Reask:
    """One reply (or the error that replaced it) -> a stored verdict or the next re-ask.

    ``outcome`` is a ``Completion`` or a failure reason; failures are unscored at once
    (never cached: the store retries them on the next run), as in ``judge_one``.
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
        return Reask(key, history, *usage, result_id=result_id)
    reason = f"unparseable: {error} (after {settings.max_reasks + 1} attempts)"
    return _verdict(key, settings, None, "", reason, attempts, usage)


def _usage(prior: Reask | None, outcome: Completion | str) -> tuple[int, int, int]:
    base = (
        (prior.prompt_tokens, prior.completion_tokens, prior.cached_tokens) if prior else (0, 0, 0)
    )
    if isinstance(outcome, str):
        return base
    return (
        base[0] + outcome.prompt_tokens,
        base[1] + outcome.completion_tokens,
        base[2] + outcome.cached_tokens,
    )


def _verdict(
    key: str,
    settings: JudgeSettings,
    verdict: str | None,
    explanation: str,
    reason: str | None,
    attempts: int,
    usage: tuple[int, int, int],
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
        created_at=time.time(),
    )
