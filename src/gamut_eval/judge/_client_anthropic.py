"""The fast judge client for Anthropic's Messages API (``POST {base}/v1/messages``).

The same transport as the OpenAI-compatible client (``_client_http.HttpExecutor``: one session,
AIMD concurrency, rate buckets, Retry-After, backoff with full jitter); only the wire
format differs:

- headers ``x-api-key`` and ``anthropic-version: 2023-06-01``;
- the system prompt goes in ``system``, as a text block marked as a cache breakpoint;
- the first user message is sent as blocks: the per-response prefix (question and fenced
  answer), marked ``cache_control: ephemeral`` so every check of one answer reads it from
  the prompt cache, then the check, last and unmarked. Images become base64 image blocks;
- a re-ask's turns follow as assistant and user messages;
- no structured output: the Messages API has no ``response_format``, and the prompt
  already asks for the JSON the parser reads strictly. No assistant prefill either (it
  would change the text the parser sees).

Replies: the text blocks of ``content`` joined; ``usage`` counts input tokens apart from
cache reads and cache writes, so the prompt total is their sum (as OpenAI reports it); the
reads are the cached tokens and the writes (``cache_creation_input_tokens``, billed at
1.25x the input price) are kept apart, so a run prices them at their own rate.

Breakpoints: the system block (the instructions, the same for every answer of one prompt
variant: cached across answers once it is as long as the model's minimum) and the
answer's shared prefix. A prefix shorter than the model's minimum is not cached and costs
nothing extra, so the marks are always sent; which prompt variant makes the prefix long
enough is ``_prompt.prompt_variant``'s choice, with the model's minimum
(``_prompt.cache_rules``).
``stop_reason: refusal`` is a refusal. Errors: 429 (``rate_limit_error``) throttles and is
retried after ``retry-after``; 500 and 529 (``overloaded_error``) are retried with
backoff; 401/403 stop the run naming ``ANTHROPIC_API_KEY``; 400/404/413 reject the
request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gamut_eval.judge._client import (
    EMPTY_TURN,
    ChatMessage,
    Completion,
    JudgeRequestRejected,
    content_part,
    token_count,
)
from gamut_eval.judge._client_http import (
    HttpExecutor,
    Refused,
    Transient,
    json_body,
    retry_after_s,
    with_bound,
)
from gamut_eval.judge._prompt import conversation
from gamut_eval.judge._resolve import Endpoint
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._wire_openai import error_fields

ANTHROPIC_VERSION = "2023-06-01"
_USER_AGENT = "gamut-eval (fast judge executor, anthropic)"
_EPHEMERAL = {"type": "ephemeral"}
_RETRYABLE_4XX = frozenset({408, 409})
_POLICY_WORDS = ("content filtering", "content policy", "usage policy")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(url: str) -> dict[str, Any]:
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[5:].split(";", 1)[0] or "image/png"
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _block(kind: str, value: str) -> dict[str, Any]:
    return _text(value) if kind == "text" else _image(value)


def _turn(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content if content.strip() else EMPTY_TURN
    if isinstance(content, list):
        return [_block(*content_part(part)) for part in content]
    return EMPTY_TURN


def anthropic_body(
    model_name: str, messages: list[ChatMessage], settings: JudgeSettings
) -> dict[str, Any]:
    """A Messages API body for OpenAI-style ``messages`` (as ``render_messages`` and the
    re-ask write them)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for role, content in conversation(messages):
        if role == "system":
            system.append(_text(content))
        elif role == "first":  # the shared prefix marked as a cache breakpoint, the check last
            blocks = [_block(*part) for part in content]
            if len(blocks) > 1:
                blocks[-2]["cache_control"] = _EPHEMERAL
            turns.append({"role": "user", "content": blocks})
        else:
            turns.append({"role": role, "content": _turn(content)})
    body: dict[str, Any] = {**settings.request_args, "model": model_name}
    body["max_tokens"] = settings.max_tokens + _thinking_budget(settings.request_args)
    if system:
        system[-1]["cache_control"] = _EPHEMERAL
        body["system"] = system
    body["messages"] = turns
    if not _thinking_budget(settings.request_args):  # extended thinking takes no temperature
        body["temperature"] = settings.temperature
    return body


def _thinking_budget(args: dict[str, Any]) -> int:
    """The budget of extended thinking asked for with ``-J thinking=...``: its tokens count
    against ``max_tokens``, so the verdict's own bound is added on top of it."""
    thinking = args.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        return budget if isinstance(budget, int) and budget > 0 else 0
    return 0


def completion_from_message(
    body: Any, *, latency_s: float = 0.0, transport_attempts: int = 1
) -> Completion | None:
    """A Messages API reply as a ``Completion``; None when it is not one."""
    if not isinstance(body, dict) or body.get("type") != "message":
        return None
    content = body.get("content")
    if not isinstance(content, list):
        return None
    text = "".join(
        block.get("text", "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )
    usage = body.get("usage") or {}
    cache_read = token_count(usage.get("cache_read_input_tokens"))
    cache_write = token_count(usage.get("cache_creation_input_tokens"))
    refusal = None
    if body.get("stop_reason") == "refusal":
        refusal = text or "the model declined to answer (stop_reason=refusal)"
    return Completion(
        text=text,
        prompt_tokens=token_count(usage.get("input_tokens")) + cache_read + cache_write,
        completion_tokens=token_count(usage.get("output_tokens")),
        cached_tokens=cache_read,
        cache_write_tokens=cache_write,
        latency_s=latency_s,
        transport_attempts=transport_attempts,
        refusal=refusal,
        raw=body,
        truncated=body.get("stop_reason") == "max_tokens",
    )


class AnthropicExecutor(HttpExecutor):
    """The fast judge client for ``anthropic/<model>`` judges (``Executor`` protocol).

    Use as ``async with AnthropicExecutor(endpoint, settings) as judge`` or call
    ``aclose()``; ``endpoint`` comes from ``resolve_endpoint("anthropic/...")``.
    """

    def __init__(self, endpoint: Endpoint, settings: JudgeSettings | None = None) -> None:
        headers = {
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            "User-Agent": _USER_AGENT,
        }
        if endpoint.api_key:
            headers["x-api-key"] = endpoint.api_key
        super().__init__(endpoint, settings, f"{endpoint.base_url}/v1/messages", headers)

    def _encode(
        self, messages: list[ChatMessage], structured: bool, max_tokens: int | None = None
    ) -> tuple[bytes, int]:
        settings = with_bound(self.config, max_tokens)
        body = anthropic_body(self.endpoint.model_name, messages, settings)
        return json_body(body), 0

    def _read(self, payload: Any, latency_s: float, attempt: int) -> Completion | None:
        return completion_from_message(payload, latency_s=latency_s, transport_attempts=attempt)

    def _failure(
        self, status: int, raw: bytes, headers: Mapping[str, str], attempt: int
    ) -> Transient | Refused:
        message, kind = error_fields(raw)
        if status == 429 or "rate_limit_error" in kind:
            return Transient(
                f"HTTP 429: {message}", throttled=True, retry_after_s=retry_after_s(headers)
            )
        if status >= 500 or status in _RETRYABLE_4XX:  # 529: overloaded_error
            return Transient(f"HTTP {status}: {message}", retry_after_s=retry_after_s(headers))
        if status in (401, 403):
            raise self._auth_error(status, message)
        if any(word in message.lower() for word in _POLICY_WORDS):
            raise JudgeRequestRejected(f"content policy: {message}", attempt)
        return Refused(status, message)
