"""The OpenAI chat-completions client: a lean aiohttp client for ``/v1/chat/completions``.

``OpenAIExecutor`` answers the ``fast`` backend's requests to every OpenAI-compatible
endpoint (OpenAI, vLLM, Ollama, OpenRouter, ``openai-api/<service>``...); the Ray backend's
actors send with it too.

A benchmark pass is 0.5-1 million judge calls per judge, so client CPU per call matters
(docs/architecture.md, decisions: Inspect's model layer ~20 ms of CPU per call, a plain
aiohttp client a fraction of a millisecond). Hence: one ``ClientSession`` whose connector is
sized to the concurrency and keeps connections alive, headers, URL and timeout built once,
the body serialised once per call (retries resend the same bytes), and no allocation on the
success path beyond the reply itself.

Transport (``_client_http.HttpExecutor``, shared with the Anthropic and Gemini clients;
docs/reliability.md B6-B8):

- 429: retried after ``Retry-After`` (or ``retry-after-ms``) plus jitter, without it on
  the backoff; the adaptive limit halves (flow control: ``_client_http.py``).
- Before the first request to a self-hosted server, what it says about its slots
  (llama.cpp's ``/props``, vLLM's ``/metrics``: ``_concurrency.py``) sets where the
  adaptive limit starts.
- 5xx, 408, 409, timeouts, connection errors, bodies cut off mid-way and 200 replies that
  are not a chat completion: retried with exponential backoff and full jitter. A partial
  body is never parsed as a reply.
- 400/404/413/422 and content-policy refusals: ``JudgeRequestRejected`` at once.
- 401/403: ``JudgeAuthError`` naming the environment variable to set.
- Transient failures beyond ``max_retries`` retries: ``JudgeUnavailable``.

How a body is written and a reply read is ``_wire_openai.py``'s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp

from gamut_eval.judge._client import (
    ChatMessage,
    Completion,
    JudgeRequestRejected,
    JudgeUnavailable,
)
from gamut_eval.judge._client_http import (
    HttpExecutor,
    Refused,
    Transient,
    json_body,
    retry_after_s,
    with_bound,
)
from gamut_eval.judge._concurrency import ServerSlots, hosted_api, read_server_slots
from gamut_eval.judge._resolve import Endpoint
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._wire_openai import (
    POLICY_MARKERS,
    RequestShape,
    completion_from_body,
    error_fields,
    initial_shape,
)

_USER_AGENT = "gamut-eval (fast judge executor)"
_RETRYABLE_4XX = frozenset({408, 409})  # request timeout; conflict/lock (retried by the SDK)

_INVALID_REQUEST = (
    "validation error", "input should be", "field required", "extra inputs",
    "unsupported", "not supported", "invalid request", "invalid_request",
)  # fmt: skip


def _names_the_request(message: str) -> bool:
    """Whether a 5xx body says the request is invalid (llama.cpp's server answers a
    response_format it does not take with HTTP 500 and a validation error)."""
    text = message.lower()
    return any(marker in text for marker in _INVALID_REQUEST)


class OpenAIExecutor(HttpExecutor):
    """The default judge executor for OpenAI-compatible endpoints (``Executor`` protocol;
    its use, the transport, ``clock`` and ``sleep``: ``HttpExecutor``). Of ``settings`` it
    also reads what goes in the body (temperature, max tokens, structured output)."""

    def __init__(
        self,
        endpoint: Endpoint,
        settings: JudgeSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        url = f"{endpoint.base_url}/chat/completions"
        super().__init__(endpoint, settings, url, headers, clock=clock, sleep=sleep)
        config = self.config
        self.shape: RequestShape = initial_shape(endpoint.model_name, config)
        """How this endpoint and model take their parameters; corrected on refusals."""
        self._unstructured = config.model_copy(update={"structured_output": False})

    def _encode(
        self, messages: list[ChatMessage], structured: bool, max_tokens: int | None = None
    ) -> tuple[bytes, int]:
        """The body in the current shape, and the shape's version it was written in."""
        settings = with_bound(self.config if structured else self._unstructured, max_tokens)
        body = self.shape.body(self.endpoint.model_name, messages, settings)
        return json_body(body), len(self.shape.corrections)

    async def _server_slots(self, session: aiohttp.ClientSession) -> ServerSlots | None:
        """A self-hosted server's slots, when the limit adapts and has room to start
        anywhere (``--concurrency`` above 1: the probe's client asks nothing)."""
        limit = self._limit
        if not limit.adaptive or limit.ceiling == 1 or hosted_api(self.endpoint.base_url):
            return None
        return await read_server_slots(
            session, self.endpoint.base_url, (self._proxy, self._proxy_headers)
        )

    def _adapt(self, refused: Refused, version: int) -> bool:
        """Whether the request can be sent again in another shape (corrected now, or by
        another request since this one was written)."""
        if len(self.shape.corrections) != version:
            return True
        if self.shape.correct(refused.status, refused.message) is None:
            return False
        self._noted(f"{self.judge_id} at {self.endpoint.base_url}: {self.shape.corrections[-1]}")
        return True

    def _read(self, payload: Any, latency_s: float, attempt: int) -> Completion | str:
        return completion_from_body(payload, latency_s=latency_s, transport_attempts=attempt)

    def _failure(
        self, status: int, raw: bytes, headers: Mapping[str, str], attempt: int
    ) -> Transient | Refused:
        """Classify a non-200 reply: retryable, refused (the request itself), or raise."""
        message, kind = error_fields(raw)
        if status == 429:
            if "insufficient_quota" in kind:  # billing, not rate: retrying cannot help
                raise JudgeUnavailable(f"quota exhausted (HTTP 429): {message}", attempt)
            return Transient(
                f"HTTP 429: {message}", throttled=True, retry_after_s=retry_after_s(headers)
            )
        if status >= 500 and _names_the_request(message):
            # the server says the request is invalid: the same bytes will fail again
            return Refused(status, message)
        if status >= 500 or status in _RETRYABLE_4XX:
            return Transient(f"HTTP {status}: {message}")
        if any(marker in kind for marker in POLICY_MARKERS):
            raise JudgeRequestRejected(f"content policy: {message}", attempt)
        if status in (401, 403):
            raise self._auth_error(status, message)
        return Refused(status, message)


FastExecutor = OpenAIExecutor
"""The old name of ``OpenAIExecutor``, kept for callers that import it."""
