"""A deterministic fake of Google's Gemini API (``POST /v1beta/models/{model}:generateContent``)
for tests and benchmarks.

It is ``FakeOpenAIServer`` with another wire format, as ``FakeAnthropicServer`` is: the same
127.0.0.1-only listener, request log, reply policies (``testing._policies``: they are handed
the request with OpenAI-style ``model`` and ``messages`` added, translated from
``systemInstruction`` and ``contents``) and fault rules. What it checks and answers:

- the ``x-goog-api-key`` header: missing is 403 ``PERMISSION_DENIED``, a wrong key 400
  ``INVALID_ARGUMENT`` "API key not valid", as the real API answers;
- a non-empty ``contents`` of ``user``/``model`` turns with non-empty parts, no unknown
  fields, and a ``responseSchema`` without ``additionalProperties`` (outside the subset);
- replies as ``{"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason"}],
  "usageMetadata": ...}``, with implicit caching simulated: the first user turn's parts
  before the last are cached after their first use;
- errors as ``{"error": {"code", "message", "status"}}``; fault ``http_429`` is
  ``RESOURCE_EXHAUSTED`` with ``retry-after`` and a ``retryDelay``, ``content_policy`` a
  200 whose candidate has ``finishReason: SAFETY`` and no content.

``base_url`` is ``http://127.0.0.1:PORT/v1beta`` (the value for ``GOOGLE_BASE_URL``).
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

__all__ = ["FakeGeminiServer", "as_chat_request"]

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_FIELDS = frozenset(
    {"contents", "systemInstruction", "generationConfig", "safetySettings", "tools",
     "toolConfig", "cachedContent", "labels"}
)  # fmt: skip
_CONFIG_FIELDS = frozenset(
    {"temperature", "topP", "topK", "maxOutputTokens", "candidateCount", "stopSequences",
     "responseMimeType", "responseSchema", "responseJsonSchema", "thinkingConfig", "seed",
     "presencePenalty", "frequencyPenalty", "responseModalities"}
)  # fmt: skip
BAD_KEY = "API key not valid. Please pass a valid API key."


def gemini_error(
    status: int, message: str, headers: dict[str, str] | None = None, retry_s: float | None = None
) -> web.Response:
    """``{"error": {"code", "message", "status"}}`` with the API's status for ``status``."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _STATUS.get(status, "UNKNOWN"),
    }
    if retry_s is not None:
        delay = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_s}s"}
        error["details"] = [delay]
    return web.Response(
        body=json.dumps({"error": error}).encode(),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _has_key(schema: Any, name: str) -> bool:
    if isinstance(schema, dict):
        return name in schema or any(_has_key(v, name) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_key(v, name) for v in schema)
    return False


def _problem(payload: Any) -> str | None:
    """Why the real API would refuse this body (HTTP 400), or None."""
    if not isinstance(payload, dict):
        return "Invalid JSON payload received."
    extra = sorted(set(payload) - _FIELDS)
    if extra:
        return f'Invalid JSON payload received. Unknown name "{extra[0]}": Cannot find field.'
    config = payload.get("generationConfig") or {}
    extra = sorted(set(config) - _CONFIG_FIELDS)
    if extra:
        return f"Invalid JSON payload received. Unknown name \"{extra[0]}\" at 'generation_config'"
    if _has_key(config.get("responseSchema"), "additionalProperties"):
        return (
            'Invalid JSON payload received. Unknown name "additionalProperties" at '
            "'generation_config.response_schema'"
        )
    contents = payload.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    for i, turn in enumerate(contents):
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "model"):
            return f"* GenerateContentRequest.contents[{i}].role: must be 'user' or 'model'"
        parts = turn.get("parts")
        if not isinstance(parts, list) or not parts:
            return (
                f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            )
        for part in parts:
            if not isinstance(part, dict) or not ({"text", "inlineData"} & set(part)):
                return f"* GenerateContentRequest.contents[{i}].parts: a part needs data"
    return None


def _chat_parts(parts: Any) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": str(p["text"])}
        for p in (parts if isinstance(parts, list) else [])
        if isinstance(p, dict) and "text" in p
    ]


def as_chat_request(payload: dict[str, Any], model: str) -> dict[str, Any]:
    """``payload`` with OpenAI-style ``model`` and ``messages`` added, for the policies."""
    messages: list[dict[str, Any]] = []
    system = payload.get("systemInstruction")
    if isinstance(system, dict):
        text = "".join(p["text"] for p in _chat_parts(system.get("parts")))
        messages.append({"role": "system", "content": text})
    for turn in payload.get("contents", []):
        role = "assistant" if turn.get("role") == "model" else "user"
        messages.append({"role": role, "content": _chat_parts(turn.get("parts"))})
    return {**payload, "model": model, "messages": messages}


class FakeGeminiServer(FakeOpenAIServer):
    """Fake ``generateContent`` on 127.0.0.1 (see the module docstring)."""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1beta``: the value for ``GOOGLE_BASE_URL``."""
        return f"{self.root_url}/v1beta"

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.router.add_post("/v1beta/models/{target}", self._generate)
        self._add_control_routes(app)
        return app

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["target"].rpartition(":")
        model = sys.intern(model)
        payload, digest = parse_body(await request.read())
        chat = as_chat_request(payload, model) if isinstance(payload, dict) else None
        return await self._logged(
            digest,
            model,
            last_user_message(chat or {}),
            lambda ctx, rule: self._answer(request, method, payload, chat, ctx, rule),
        )

    async def _answer(
        self,
        request: web.Request,
        method: str,
        payload: Any,
        chat: dict[str, Any] | None,
        ctx: RequestContext,
        rule: FaultRule | None,
    ) -> web.StreamResponse:
        if self._latency_s:
            await self._sleep(self._latency_s)
        if method != "generateContent" or not ctx.model:
            return gemini_error(404, f"Method {method!r} is not found (fake).")
        key = request.headers.get("x-goog-api-key")
        if key is None:
            return gemini_error(403, "Method doesn't allow unregistered callers (fake).")
        if self._api_key is not None and key != self._api_key:
            return gemini_error(400, BAD_KEY)
        problem = _problem(payload)
        if problem is not None or chat is None:
            return gemini_error(400, problem or "Invalid JSON payload received.")
        if self._known_models_only and ctx.model not in self._models:
            return gemini_error(404, f"models/{ctx.model} is not found for API version v1beta")
        try:
            return await self._serve(request, payload, chat, ctx, rule)
        except Exception as exc:  # a policy bug must reach the test as a 500, not a hang
            return gemini_error(500, f"policy failed: {type(exc).__name__}: {exc}")

    async def _serve(
        self,
        request: web.Request,
        payload: dict[str, Any],
        chat: dict[str, Any],
        ctx: RequestContext,
        rule: FaultRule | None,
    ) -> web.StreamResponse:
        action = rule.action if rule is not None else None
        if action is None:
            return self._answer_with(payload, self._policy(chat, ctx))
        assert rule is not None
        if action == "content_policy":
            return self._answer_with(payload, "", "SAFETY")
        if action in HTTP_FAULTS:
            fault = HTTP_FAULTS[action]
            status = 503 if fault.status == 529 else fault.status
            if status == 429:
                headers = {"retry-after": seconds_header(rule.retry_after_s)}
                return gemini_error(429, fault.message, headers, rule.retry_after_s)
            return gemini_error(status, fault.message)
        if action in CONTENT_FAULTS:
            return self._answer_with(payload, CONTENT_FAULTS[action])
        if action == "fence_echo":
            return self._answer_with(payload, self._fence_echo(chat, ctx))
        if action == "timeout":
            await self._sleep(rule.timeout_s)
            return self._answer_with(payload, self._policy(chat, ctx))
        body = self._reply_body(payload, self._policy(chat, ctx), "STOP")
        return await reset_mid_body(request, body)

    def _answer_with(
        self, payload: dict[str, Any], text: str, finish: str = "STOP"
    ) -> web.Response:
        body = self._reply_body(payload, text, finish)
        return web.Response(body=body, content_type="application/json")

    def _cached_tokens(self, payload: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, of which read from the implicit cache)."""

        def text(parts: Any) -> str:
            return "".join(str(p.get("text", "")) for p in parts)

        system = payload.get("systemInstruction") or {}
        first, *later = payload["contents"]
        prefix = text(system.get("parts", [])) + text(first["parts"][:-1])
        rest = text(first["parts"][-1:]) + "".join(text(t["parts"]) for t in later)
        cached = 0
        if len(first["parts"]) > 1:
            hit = self._prompt_cache.hit(prefix)
            cached = len(prefix) // 4 if hit else 0
        return len(prefix) // 4 + max(1, len(rest) // 4), cached

    def _reply_body(self, payload: dict[str, Any], text: str, finish: str) -> bytes:
        prompt, cached = self._cached_tokens(payload)
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": max(1, len(text) // 4),
            "totalTokenCount": prompt + max(1, len(text) // 4),
        }
        if cached:
            usage["cachedContentTokenCount"] = cached
        candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
        if text:
            candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        return json.dumps({"candidates": [candidate], "usageMetadata": usage}).encode()
