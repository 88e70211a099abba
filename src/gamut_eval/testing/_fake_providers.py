"""Deterministic fakes of Anthropic's Messages API and Google's Gemini API for tests and
benchmarks: ``FakeAnthropicServer`` (``POST /v1/messages``) and ``FakeGeminiServer``
(``POST /v1beta/models/{model}:generateContent``).

Each is ``FakeOpenAIServer`` with another wire format: the same 127.0.0.1-only listener
(background thread or the running loop), request log, reply policies (``testing._policies``)
and fault rules. What differs is what the real API checks and answers.

``FakeAnthropicServer`` (the policies read the judge prompt from ``messages``):

- the ``x-api-key`` header (any key, or the one given) and ``anthropic-version``;
- the required fields ``model``, ``max_tokens`` and a non-empty ``messages`` that starts
  with a user turn and alternates, no empty text, and no fields the API does not take
  (``response_format`` is refused, as the real API refuses it);
- replies as ``{"type": "message", "content": [{"type": "text", ...}], "usage": ...}``,
  with Anthropic's prompt cache emulated by its documented rules (``_prompt_caches``: a
  prefix ending at a ``cache_control`` block, from the model's minimum, written once and
  read afterwards, writes and reads reported apart);
- errors as ``{"type": "error", "error": {"type", "message"}}``; fault ``http_529`` is
  ``overloaded_error``, ``http_429`` a ``rate_limit_error`` with ``retry-after``, a
  refusal fault ``stop_reason: refusal``.

Its ``base_url`` is the root URL (``ANTHROPIC_BASE_URL``; the client appends
``/v1/messages``).

``FakeGeminiServer`` (the policies are handed the request with OpenAI-style ``model`` and
``messages`` added, translated from ``systemInstruction`` and ``contents``):

- the ``x-goog-api-key`` header: missing is 403 ``PERMISSION_DENIED``, a wrong key 400
  ``INVALID_ARGUMENT`` "API key not valid", as the real API answers;
- a non-empty ``contents`` of ``user``/``model`` turns with non-empty parts, no unknown
  fields, and a ``responseSchema`` without ``additionalProperties`` (outside the subset);
- replies as ``{"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason"}],
  "usageMetadata": ...}``, with Gemini's implicit cache emulated by its documented rules
  (``_prompt_caches``: the longest prefix seen before that ends at a part boundary and
  reaches the model's minimum);
- errors as ``{"error": {"code", "message", "status"}}``; fault ``http_429`` is
  ``RESOURCE_EXHAUSTED`` with ``retry-after`` and a ``retryDelay``, ``content_policy`` a
  200 whose candidate has ``finishReason: SAFETY`` and no content.

Its ``base_url`` is ``http://127.0.0.1:PORT/v1beta`` (the value for ``GOOGLE_BASE_URL``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from aiohttp import web

from gamut_eval.testing._fake_openai import (
    FakeOpenAIServer,
    json_response,
    output_tokens,
    parse_body,
    seconds_header,
)
from gamut_eval.testing._faults import CONTENT_FAULTS, HTTP_FAULTS, FaultRule
from gamut_eval.testing._prompt_caches import CacheUse, anthropic_cache_use, gemini_cache_use
from gamut_eval.testing._requests import RequestContext, last_user_message

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
_ANTHROPIC_FIELDS = frozenset(
    {"model", "max_tokens", "messages", "system", "temperature", "top_p", "top_k",
     "stop_sequences", "stream", "metadata", "tools", "tool_choice", "thinking",
     "service_tier"}
)  # fmt: skip


def anthropic_error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    """``{"type": "error", "error": {"type", "message"}}`` with the API's type for ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return json_response(
        {"type": "error", "error": {"type": kind, "message": message}}, status, headers
    )


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _anthropic_problem(payload: Any) -> str | None:
    """Why the real Messages API would refuse this body (HTTP 400), or None."""
    if not isinstance(payload, dict):
        return "Body must be a JSON object."
    extra = sorted(set(payload) - _ANTHROPIC_FIELDS)
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


def _all_blocks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The system blocks, then every message's blocks, in order."""
    blocks = _blocks(payload.get("system"))
    for message in payload.get("messages", []):
        if isinstance(message, dict):
            blocks += _blocks(message.get("content"))
    return blocks


class FakeAnthropicServer(FakeOpenAIServer):
    """Fake ``/v1/messages`` on 127.0.0.1 (see the module docstring)."""

    _LENGTH = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the value for ``ANTHROPIC_BASE_URL``."""
        return self.root_url

    def _add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/messages", self._receive)

    def _cache_use(self, payload: Any, model: str) -> CacheUse | None:
        if _anthropic_problem(payload) is not None:
            return None
        return anthropic_cache_use(self._prompt_cache, model, _all_blocks(payload))

    def _refusal(
        self, request: web.Request, payload: Any, ctx: RequestContext
    ) -> web.Response | None:
        key = request.headers.get("x-api-key")
        if key is None:
            return anthropic_error(401, "x-api-key header is required")
        if self._api_key is not None and key != self._api_key:
            return anthropic_error(401, "invalid x-api-key")
        if request.headers.get("anthropic-version") != ANTHROPIC_VERSION:
            return anthropic_error(400, "anthropic-version: header is required")
        problem = _anthropic_problem(payload)
        if problem is not None:
            return anthropic_error(400, problem)
        if self._known_models_only and payload["model"] not in self._models:
            return anthropic_error(404, f"model: {payload['model']}")
        return None

    def _failed(self, message: str) -> web.Response:
        return anthropic_error(500, message)

    def _fault_reply(
        self, payload: dict[str, Any], ctx: RequestContext, rule: FaultRule
    ) -> web.Response | None:
        action = rule.action
        if action == "content_policy":
            return anthropic_error(400, "Output blocked by content filtering policy (fake).")
        if action in HTTP_FAULTS:
            fault = HTTP_FAULTS[action]
            headers = {"retry-after": seconds_header(rule.retry_after_s)}
            return anthropic_error(
                fault.status, fault.message, headers if fault.status == 429 else None
            )
        if action in CONTENT_FAULTS:
            stop = "refusal" if action == "refusal" else None
            return self._reply_with(payload, ctx, CONTENT_FAULTS[action], stop)
        return None

    def _body(
        self,
        payload: dict[str, Any],
        ctx: RequestContext,
        text: str,
        finish: str | None = None,
        refusal: str | None = None,
    ) -> bytes:
        use = self._answered(ctx, output_tokens(text)) or CacheUse(1)
        usage = {
            "input_tokens": use.prompt_tokens - use.read - use.written,
            "cache_creation_input_tokens": use.written,
            "cache_read_input_tokens": use.read,
            "output_tokens": output_tokens(text),
        }
        content = [{"type": "text", "text": text}] if text else []
        message = {
            "id": f"msg_fake_{ctx.index}",
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": finish or "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        return json.dumps(message).encode()


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_GEMINI_FIELDS = frozenset(
    {"contents", "systemInstruction", "generationConfig", "safetySettings", "tools",
     "toolConfig", "cachedContent", "labels"}
)  # fmt: skip
_GEMINI_CONFIG_FIELDS = frozenset(
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
        "status": _GEMINI_STATUS.get(status, "UNKNOWN"),
    }
    if retry_s is not None:
        delay = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_s}s"}
        error["details"] = [delay]
    return json_response({"error": error}, status, headers)


def _has_key(schema: Any, name: str) -> bool:
    if isinstance(schema, dict):
        return name in schema or any(_has_key(v, name) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_key(v, name) for v in schema)
    return False


def _gemini_problem(payload: Any) -> str | None:
    """Why the real API would refuse this body (HTTP 400), or None."""
    if not isinstance(payload, dict):
        return "Invalid JSON payload received."
    extra = sorted(set(payload) - _GEMINI_FIELDS)
    if extra:
        return f'Invalid JSON payload received. Unknown name "{extra[0]}": Cannot find field.'
    config = payload.get("generationConfig") or {}
    extra = sorted(set(config) - _GEMINI_CONFIG_FIELDS)
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


def _all_parts(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The system instruction's parts, then every turn's parts, in order."""
    system = payload.get("systemInstruction")
    parts = list(system.get("parts") or []) if isinstance(system, dict) else []
    for turn in payload.get("contents", []):
        parts += [p for p in turn.get("parts", []) if isinstance(p, dict)]
    return parts


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

    _LENGTH = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1beta``: the value for ``GOOGLE_BASE_URL``."""
        return f"{self.root_url}/v1beta"

    def _add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1beta/models/{target}", self._generate)

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        model = sys.intern(request.match_info["target"].rpartition(":")[0])
        payload, digest = parse_body(await request.read())
        chat = as_chat_request(payload, model) if isinstance(payload, dict) else None
        use = None
        if _gemini_problem(payload) is None:
            use = gemini_cache_use(self._prompt_cache, model, _all_parts(payload))
        user_text = last_user_message(chat or {})
        return await self._logged(request, payload, digest, model, user_text, use, chat)

    def _refusal(
        self, request: web.Request, payload: Any, ctx: RequestContext
    ) -> web.Response | None:
        method = request.match_info["target"].rpartition(":")[2]
        if method != "generateContent" or not ctx.model:
            return gemini_error(404, f"Method {method!r} is not found (fake).")
        key = request.headers.get("x-goog-api-key")
        if key is None:
            return gemini_error(403, "Method doesn't allow unregistered callers (fake).")
        if self._api_key is not None and key != self._api_key:
            return gemini_error(400, BAD_KEY)
        problem = _gemini_problem(payload)
        if problem is not None:
            return gemini_error(400, problem)
        if self._known_models_only and ctx.model not in self._models:
            return gemini_error(404, f"models/{ctx.model} is not found for API version v1beta")
        return None

    def _failed(self, message: str) -> web.Response:
        return gemini_error(500, message)

    def _fault_reply(
        self, payload: dict[str, Any], ctx: RequestContext, rule: FaultRule
    ) -> web.Response | None:
        action = rule.action
        if action == "content_policy":
            return self._reply_with(payload, ctx, "", "SAFETY")
        if action in HTTP_FAULTS:
            fault = HTTP_FAULTS[action]
            status = 503 if fault.status == 529 else fault.status
            if status == 429:
                headers = {"retry-after": seconds_header(rule.retry_after_s)}
                return gemini_error(429, fault.message, headers, rule.retry_after_s)
            return gemini_error(status, fault.message)
        if action in CONTENT_FAULTS:
            return self._reply_with(payload, ctx, CONTENT_FAULTS[action])
        return None

    def _body(
        self,
        payload: dict[str, Any],
        ctx: RequestContext,
        text: str,
        finish: str | None = None,
        refusal: str | None = None,
    ) -> bytes:
        use = self._answered(ctx, output_tokens(text)) or CacheUse(1)
        usage = {
            "promptTokenCount": use.prompt_tokens,
            "candidatesTokenCount": output_tokens(text),
            "totalTokenCount": use.prompt_tokens + output_tokens(text),
        }
        if use.read:
            usage["cachedContentTokenCount"] = use.read
        candidate: dict[str, Any] = {"finishReason": finish or "STOP", "index": 0}
        if text:
            candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        return json.dumps({"candidates": [candidate], "usageMetadata": usage}).encode()
