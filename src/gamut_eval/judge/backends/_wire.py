"""The OpenAI chat-completions wire format, written and read in one place.

The fast client sends these bodies (written by ``_shape.RequestShape``), batch files carry
them line by line, Ray actors and ``vllm run-batch`` answer in them; all read replies and
error bodies with these helpers, so a reply means the same thing whichever way it
travelled.
"""

from __future__ import annotations

import json
from typing import Any

from gamut_eval.judge._types import Completion

__all__ = [
    "FILTERED",
    "POLICY_MARKERS",
    "completion_from_body",
    "error_fields",
    "error_reason",
    "text_of",
]

POLICY_MARKERS = ("content_policy", "content_filter")
"""Error types or codes with which providers say a request broke their content policy."""
_MAX_ERROR_CHARS = 500
FILTERED = "content policy: the provider filtered the judge's reply (finish_reason=content_filter)"


def error_fields(raw: bytes) -> tuple[str, str]:
    """``(message, "type code")`` of an error body in OpenAI, vLLM or FastAPI shape."""
    try:
        payload = json.loads(raw)
    except ValueError:
        return raw[:_MAX_ERROR_CHARS].decode("utf-8", "replace").strip() or "(empty body)", ""
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, str):
        return error[:_MAX_ERROR_CHARS], ""
    if not isinstance(error, dict):
        return str(error)[:_MAX_ERROR_CHARS], ""
    message = error.get("message") or error.get("detail") or json.dumps(error)
    kind = f"{error.get('type') or ''} {error.get('code') or ''}"
    return str(message)[:_MAX_ERROR_CHARS], kind


def error_reason(status: int, payload: Any) -> str:
    """The unscored reason for a non-200 reply (content-policy refusals named as such)."""
    message, kind = error_fields(json.dumps(payload).encode())
    if any(marker in kind for marker in POLICY_MARKERS):
        return f"content policy: {message}"
    return f"HTTP {status}: {message}"


def text_of(content: Any) -> str:
    """The text of a message's content (a few servers answer in content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def completion_from_body(
    body: Any, *, latency_s: float = 0.0, transport_attempts: int = 1
) -> Completion | str:
    """A chat-completion body as a ``Completion``, or the reason it cannot be one (a
    reason starting with ``content policy`` when the provider filtered the reply)."""
    try:
        choice = body["choices"][0]
        message = choice["message"]
        text = text_of(message.get("content"))
    except (LookupError, TypeError, AttributeError):
        return f"the judge endpoint sent an unusable reply: {json.dumps(body)[:200]}"
    if choice.get("finish_reason") == "content_filter":
        return FILTERED
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    refusal = message.get("refusal")
    return Completion(
        text=text,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=_int(details.get("cached_tokens")),
        latency_s=latency_s,
        transport_attempts=transport_attempts,
        refusal=refusal if isinstance(refusal, str) else None,
        raw=body,
    )
