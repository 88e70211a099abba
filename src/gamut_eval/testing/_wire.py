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


def request_problem(payload: Any) -> HttpFault | None:
    """Why a real API would reject this body with a 400, or None."""
    if not isinstance(payload, dict):
        return _MALFORMED
    if not isinstance(payload.get("messages"), list):
        return _NO_MESSAGES
    if payload.get("stream"):
        return _NO_STREAM
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
