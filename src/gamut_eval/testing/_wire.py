"""The OpenAI chat-completions wire format, as the fake server writes it.

Kept apart from the server so the request handler stays short: bodies are built as bytes
with ``json.dumps`` once per reply, which keeps the fake cheap at thousands of requests/s.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from aiohttp import web

from gamut_eval.testing._faults import HttpFault
from gamut_eval.testing._requests import RequestContext, body_hash, prompt_text

__all__ = [
    "BAD_API_KEY",
    "completion_body",
    "error_response",
    "estimate_prompt_tokens",
    "json_response",
    "parse_body",
    "policy_error_response",
    "request_problem",
    "reset_mid_body",
    "seconds_header",
    "verdict_of",
]

_MALFORMED = HttpFault(400, "invalid_request_error", None, "Body must be a JSON object.")
_NO_MESSAGES = HttpFault(400, "invalid_request_error", None, "'messages' must be a list.")
_NO_STREAM = HttpFault(400, "invalid_request_error", None, "The fake server cannot stream.")
BAD_API_KEY = HttpFault(401, "invalid_request_error", "invalid_api_key", "Incorrect API key.")


def json_response(payload: object, status: int = 200) -> web.Response:
    """A JSON reply serialised once, straight to bytes."""
    body = json.dumps(payload).encode()
    return web.Response(body=body, status=status, content_type="application/json")


def error_response(fault: HttpFault, headers: dict[str, str] | None = None) -> web.Response:
    """An OpenAI-style ``{"error": {message, type, param, code}}`` reply."""
    error = {"message": fault.message, "type": fault.type, "param": None, "code": fault.code}
    response = json_response({"error": error}, status=fault.status)
    response.headers.update(headers or {})
    return response


def policy_error_response(exc: Exception) -> web.Response:
    """A 500 naming the exception a policy raised, so the test sees why."""
    message = f"policy failed: {type(exc).__name__}: {exc}"
    return error_response(HttpFault(500, "server_error", "policy_error", message))


def completion_body(
    ctx: RequestContext, prompt_tokens: int, content: str, refusal: str | None = None
) -> bytes:
    """A ``chat.completion`` object with one ``stop`` choice, as bytes."""
    completion_tokens = max(1, len(content) // 4)
    message = {"role": "assistant", "content": content, "refusal": refusal}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    completion = {
        "id": f"chatcmpl-fake-{ctx.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": ctx.model,
        "choices": [choice],
        "usage": usage,
        "system_fingerprint": "fake",
    }
    return json.dumps(completion).encode()


def parse_body(raw: bytes) -> tuple[Any, str]:
    """The parsed body (None if not JSON) and its hash; raw bytes are hashed if not JSON."""
    try:
        payload = json.loads(raw)
    except ValueError:
        return None, hashlib.sha256(raw).hexdigest()
    return payload, body_hash(payload)


DIALECTS = ("openai", "openai-reasoning", "llama-cpp")
"""What the fake refuses, as the servers it stands for do:

- ``openai``: a chat model; takes every parameter gamut sends.
- ``openai-reasoning``: an OpenAI reasoning model (o series, gpt-5): ``max_tokens`` and
  any temperature but 1 are refused with OpenAI's own 400 bodies.
- ``llama-cpp``: llama-cpp-python's server with a text-only model: ``response_format`` of
  type ``json_schema`` is answered with HTTP 500 and a validation error (it takes
  ``json_object`` with a schema), and a message with an image part with HTTP 500 from its
  chat template, which renders text content only.
"""
_NO_MAX_TOKENS = HttpFault(
    400,
    "invalid_request_error",
    "unsupported_parameter",
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
)
_NO_TEMPERATURE = HttpFault(
    400,
    "invalid_request_error",
    "unsupported_value",
    "Unsupported value: 'temperature' does not support 0.0 with this model. "
    "Only the default (1) value is supported.",
)
_NO_JSON_SCHEMA = HttpFault(
    500,
    "internal_server_error",
    None,
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should "
    "be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]",
)


_NO_IMAGES = HttpFault(
    500,
    "internal_server_error",
    None,
    'can only concatenate str (not "list") to str: the chat template renders text '
    "content only (the message has an image_url part)",
)


def _has_image(messages: list[Any]) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
    )


def unknown_model(payload: dict[str, Any], models: tuple[str, ...]) -> HttpFault | None:
    """OpenAI's 404 for a model the server does not serve, or None."""
    model = payload.get("model")
    if model in models:
        return None
    return HttpFault(
        404,
        "invalid_request_error",
        "model_not_found",
        f"The model `{model}` does not exist or you do not have access to it.",
    )


def request_problem(payload: Any, dialect: str = "openai") -> HttpFault | None:
    """Why a real API of ``dialect`` would refuse this body, or None."""
    if not isinstance(payload, dict):
        return _MALFORMED
    if not isinstance(payload.get("messages"), list):
        return _NO_MESSAGES
    if payload.get("stream"):
        return _NO_STREAM
    if dialect == "openai-reasoning":
        if "max_tokens" in payload:
            return _NO_MAX_TOKENS
        if payload.get("temperature", 1) != 1:
            return _NO_TEMPERATURE
    if dialect == "llama-cpp":
        response_format = payload.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
            return _NO_JSON_SCHEMA
        if _has_image(payload["messages"]):
            return _NO_IMAGES
    return None


def estimate_prompt_tokens(payload: dict[str, Any]) -> int:
    """The usual rough estimate: four characters per token, at least one."""
    return max(1, len(prompt_text(payload)) // 4)


def seconds_header(seconds: float) -> str:
    """Whole seconds as HTTP says ("2"); fractions ("0.3") only if a fast test asks for them."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def verdict_of(reply: str) -> str:
    """The ``verdict`` of a policy's JSON reply ("missing" when there is none)."""
    try:
        verdict = json.loads(reply).get("verdict")
    except (ValueError, AttributeError):
        return "missing"
    return verdict if isinstance(verdict, str) else "missing"


async def reset_mid_body(request: web.Request, body: bytes) -> web.StreamResponse:
    """Promise the whole body, send half, then abort the TCP connection."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(body)
    await response.prepare(request)
    await response.write(body[: len(body) // 2])
    if request.transport is not None:
        request.transport.abort()
    return response
