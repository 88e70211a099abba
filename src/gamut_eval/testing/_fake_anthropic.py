"""A deterministic fake of Anthropic's Messages API (``POST /v1/messages``) for tests and
benchmarks.

It is ``FakeOpenAIServer`` with another wire format: the same 127.0.0.1-only listener
(background thread or the running loop), request log, reply policies
(``testing._policies``, which read the judge prompt from ``messages``) and fault rules.
What differs is what a real Messages API checks and answers:

- the ``x-api-key`` header (any key, or the one given) and ``anthropic-version``;
- the required fields ``model``, ``max_tokens`` and a non-empty ``messages`` that starts
  with a user turn and alternates, no empty text, and no fields the API does not take
  (``response_format`` is refused, as the real API refuses it);
- replies as ``{"type": "message", "content": [{"type": "text", ...}], "usage": ...}``,
  with prompt caching simulated: the text up to the last ``cache_control`` block is
  written to the cache the first time and read from it afterwards;
- errors as ``{"type": "error", "error": {"type", "message"}}``; fault ``http_529`` is
  ``overloaded_error``, ``http_429`` a ``rate_limit_error`` with ``retry-after``, a
  refusal fault ``stop_reason: refusal``.

``base_url`` is the root URL (``ANTHROPIC_BASE_URL``; the client appends ``/v1/messages``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from aiohttp import web

from gamut_eval.testing._fake_openai import _MAX_BODY_BYTES, FakeOpenAIServer
from gamut_eval.testing._faults import CONTENT_FAULTS, HTTP_FAULTS, FaultRule
from gamut_eval.testing._requests import RequestContext, last_user_message
from gamut_eval.testing._wire import parse_body, reset_mid_body, seconds_header

__all__ = ["ANTHROPIC_VERSION", "FakeAnthropicServer"]

ANTHROPIC_VERSION = "2023-06-01"
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_FIELDS = frozenset(
    {"model", "max_tokens", "messages", "system", "temperature", "top_p", "top_k",
     "stop_sequences", "stream", "metadata", "tools", "tool_choice", "thinking",
     "service_tier"}
)  # fmt: skip


def anthropic_error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    """``{"type": "error", "error": {"type", "message"}}`` with the API's type for ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error")
    body = json.dumps({"type": "error", "error": {"type": kind, "message": message}})
    return web.Response(
        body=body.encode(), status=status, content_type="application/json", headers=headers
    )


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _problem(payload: Any) -> str | None:
    """Why the real Messages API would refuse this body (HTTP 400), or None."""
    if not isinstance(payload, dict):
        return "Body must be a JSON object."
    extra = sorted(set(payload) - _FIELDS)
    if extra:
        return f"{extra[0]}: Extra inputs are not permitted"
    if not isinstance(payload.get("model"), str):
        return "model: Field required"
    if not isinstance(payload.get("max_tokens"), int) or payload["max_tokens"] < 1:
        return "max_tokens: Field required"
    if payload.get("stream"):
        return "The fake server cannot stream."
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required"
    expected = "user"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != expected:
            return f"messages.{i}.role: roles must alternate, starting with 'user'"
        blocks = _blocks(message.get("content"))
        if not blocks or any(
            b.get("type") == "text" and not str(b.get("text", "")).strip() for b in blocks
        ):
            return f"messages.{i}: text content blocks must contain non-whitespace text"
        expected = "assistant" if expected == "user" else "user"
    return None


def _cache_parts(payload: dict[str, Any]) -> tuple[str, str]:
    """(text up to and including the last ``cache_control`` block, the rest)."""
    blocks = _blocks(payload.get("system"))
    for message in payload.get("messages", []):
        blocks += _blocks(message.get("content"))
    texts = [str(b.get("text", "")) for b in blocks]
    marked = [i for i, b in enumerate(blocks) if b.get("cache_control")]
    cut = marked[-1] + 1 if marked else 0
    return "".join(texts[:cut]), "".join(texts[cut:])


class FakeAnthropicServer(FakeOpenAIServer):
    """Fake ``/v1/messages`` on 127.0.0.1 (see the module docstring)."""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the value for ``ANTHROPIC_BASE_URL``."""
        return self.root_url

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.router.add_post("/v1/messages", self._messages)
        self._add_control_routes(app)
        return app

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        payload, digest = parse_body(await request.read())
        model = payload.get("model") if isinstance(payload, dict) else None
        model = sys.intern(model) if isinstance(model, str) else ""
        user_text = last_user_message(payload) if isinstance(payload, dict) else ""
        return await self._logged(
            digest, model, user_text, lambda ctx, rule: self._answer(request, payload, ctx, rule)
        )

    async def _answer(
        self, request: web.Request, payload: Any, ctx: RequestContext, rule: FaultRule | None
    ) -> web.StreamResponse:
        if self._latency_s:
            await self._sleep(self._latency_s)
        key = request.headers.get("x-api-key")
        if key is None:
            return anthropic_error(401, "x-api-key header is required")
        if self._api_key is not None and key != self._api_key:
            return anthropic_error(401, "invalid x-api-key")
        if request.headers.get("anthropic-version") != ANTHROPIC_VERSION:
            return anthropic_error(400, "anthropic-version: header is required")
        problem = _problem(payload)
        if problem is not None:
            return anthropic_error(400, problem)
        if self._known_models_only and payload["model"] not in self._models:
            return anthropic_error(404, f"model: {payload['model']}")
        try:
            return await self._serve(request, payload, ctx, rule)
        except Exception as exc:  # a policy bug must reach the test as a 500, not a hang
            return anthropic_error(500, f"policy failed: {type(exc).__name__}: {exc}")

    async def _serve(
        self,
        request: web.Request,
        payload: dict[str, Any],
        ctx: RequestContext,
        rule: FaultRule | None,
    ) -> web.StreamResponse:
        action = rule.action if rule is not None else None
        if action is None:
            return self._message(payload, ctx, self._policy(payload, ctx))
        assert rule is not None
        if action == "content_policy":
            return anthropic_error(400, "Output blocked by content filtering policy (fake).")
        if action in HTTP_FAULTS:
            fault = HTTP_FAULTS[action]
            headers = {"retry-after": seconds_header(rule.retry_after_s)}
            return anthropic_error(
                fault.status, fault.message, headers if fault.status == 429 else None
            )
        if action in CONTENT_FAULTS:
            stop = "refusal" if action == "refusal" else "end_turn"
            return self._message(payload, ctx, CONTENT_FAULTS[action], stop)
        if action == "fence_echo":
            return self._message(payload, ctx, self._fence_echo(payload, ctx))
        if action == "timeout":
            await self._sleep(rule.timeout_s)
            return self._message(payload, ctx, self._policy(payload, ctx))
        body = self._message_body(payload, ctx, self._policy(payload, ctx), "end_turn")
        return await reset_mid_body(request, body)

    def _message(
        self, payload: dict[str, Any], ctx: RequestContext, text: str, stop: str = "end_turn"
    ) -> web.Response:
        body = self._message_body(payload, ctx, text, stop)
        return web.Response(body=body, content_type="application/json")

    def _message_body(
        self, payload: dict[str, Any], ctx: RequestContext, text: str, stop: str
    ) -> bytes:
        cached, rest = _cache_parts(payload)
        read = write = 0
        if cached:
            hit = self._prompt_cache.hit(cached)
            read, write = (len(cached) // 4, 0) if hit else (0, len(cached) // 4)
        usage = {
            "input_tokens": max(1, len(rest) // 4),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "output_tokens": max(1, len(text) // 4),
        }
        content = [{"type": "text", "text": text}] if text else []
        message = {
            "id": f"msg_fake_{ctx.index}",
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return json.dumps(message).encode()
