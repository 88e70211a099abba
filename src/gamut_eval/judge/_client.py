"""What a judge client is: what it consumes and returns, and how it fails.

A client (an executor: ``Executor``) is one module per wire protocol, ``_client_<wire>.py``,
named in the registry (``_registry.CLIENTS``).

An executor turns one rendered chat request into one ``Completion``. It owns the transport
(connections, rate limits, retries of 429 / 5xx / timeouts); the engine owns the rest
(caching, re-asks for malformed verdicts, storage). Failures are typed so that a judge
failure is never scored as a model failure:

- ``JudgeAuthError``        credentials rejected (401/403): the run stops at once.
- ``JudgeRequestRejected``  the request itself is refused (400, content policy): not
                            retried; the check is unscored with the reason.
- ``JudgeUnavailable``      transient failures outlasted the bounded retries: unscored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gamut_eval.errors import GamutError, JudgeError

ChatMessage = dict[str, Any]
"""An OpenAI chat message: ``{"role": ..., "content": str | [parts]}``; parts are
``{"type": "text", "text": ...}`` or ``{"type": "image_url", "image_url": {"url": data-URL}}``."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One judge reply."""

    text: str
    """The assistant message content ('' when the model returned none)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens served from the provider's prefix cache, when reported."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's cache, when reported apart (Anthropic's
    ``cache_creation_input_tokens``); part of ``prompt_tokens``."""
    latency_s: float = 0.0
    """Wall time of the successful attempt."""
    transport_attempts: int = 1
    """HTTP attempts it took (retries of 429/5xx/timeouts included)."""
    refusal: str | None = None
    """The provider's refusal text, when it sent one."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    truncated: bool = False
    """The reply was cut at the reply-length bound (``finish_reason: length``)."""


class JudgeCallError(GamutError):
    """A judge call did not produce a reply."""

    def __init__(self, reason: str, attempts: int = 1) -> None:
        self.reason = reason
        self.attempts = attempts
        super().__init__(reason)


class JudgeRequestRejected(JudgeCallError):
    """The provider refused this request (400, content policy). Retrying will not help."""


class JudgeUnavailable(JudgeCallError):
    """Transient failures (429, 5xx, timeouts, resets) outlasted the bounded retries."""

    throttled: bool = False
    """The last failure was a throttle (a 429 that asks to wait, not an exhausted quota):
    the endpoint answered, it is only busy."""


class JudgeAuthError(JudgeError):
    """Credentials were rejected; the message names the environment variable to set."""


class JudgeServerGone(JudgeError):
    """The judge's server closed its connections and refused new ones through every retry
    of a call (it crashed or was stopped): the run stops, naming the server and how many
    checks are left unscored, instead of failing every remaining check the same way."""


class JudgeStalled(JudgeServerGone):
    """The judge stopped working mid-run: every request to its endpoint failed for
    ``dead_after_s``, or most of the recent checks ended unscored. The run stops, naming
    the endpoint, what failed and how many checks are done; a rerun continues."""


class Executor(Protocol):
    """Sends rendered judge requests to one judge model."""

    judge_id: str
    """The judge's model id as recorded with every verdict (``openai/gpt-4.1-mini``)."""

    async def complete(
        self,
        messages: list[ChatMessage],
        response_format: dict[str, Any] | None,
        *,
        max_tokens: int | None = None,
    ) -> Completion:
        """One reply; raises ``JudgeCallError`` subclasses or ``JudgeAuthError``.
        ``max_tokens``: the reply bound instead of the settings' (a re-ask after a reply
        cut at the limit)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


EMPTY_TURN = "(empty reply)"
"""Sent for an empty assistant reply replayed in a re-ask, to the APIs that refuse empty
text (Anthropic's, Gemini's)."""


def token_count(value: Any) -> int:
    """A token count of a reply's usage: the value when it is an integer, else 0."""
    return value if isinstance(value, int) else 0


def content_part(part: Mapping[str, Any]) -> tuple[Literal["text", "image"], str]:
    """One part of a ``ChatMessage``'s content as ``("text", text)`` or ``("image", url)``,
    for the clients that translate the OpenAI format; any other part is refused."""
    kind = part.get("type")
    if kind == "text":
        return "text", str(part.get("text", ""))
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if isinstance(url, str):
            return "image", url
    raise JudgeRequestRejected(f"unsupported message part of type {kind!r}")
