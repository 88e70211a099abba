"""The OpenAI chat-completions wire format, written and read in one place.

The OpenAI client (``_client_openai.py``) sends these bodies (written by ``RequestShape``),
batch files carry them line by line, Ray actors and ``vllm run-batch`` answer in them; all
read replies and error bodies with these helpers, so a reply means the same thing whichever
way it travelled. Nothing here needs aiohttp: the build reads the structured-output rules
too.

How requests to one OpenAI-compatible endpoint and model are written is learned once.
Providers disagree on the parameters of a chat request. OpenAI's reasoning models (the o
series, gpt-5) reject ``max_tokens`` (they take ``max_completion_tokens``) and any
temperature but the default; llama.cpp's server refuses ``response_format`` of type
``json_schema`` (it takes ``json_object`` with a ``schema``); some servers take no
structured output at all. A ``RequestShape`` starts from what the model's name says and is
corrected when the provider refuses a parameter: each correction is made once, logged, and
kept for every later request of the run, so a refusal is never retried blindly.

Structured output degrades in steps the server accepts: ``json_schema`` -> ``json_object``
with the schema -> none (the prompt asks for the same JSON, and the reply is parsed
strictly either way).

Requests to OpenAI itself (``openai/`` judges of the models with its prompt cache) carry
``prompt_cache_key``, the same for every check of one rendered answer
(``_prompt.prompt_cache_key``): OpenAI routes a request by a hash of the prompt's first
tokens, which are the instructions every answer shares, combined with this key, so the
checks of one answer reach the machine that holds its prefix instead of every request of
the run landing on one. A server that refuses the field has it dropped like any other
refused parameter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from gamut_eval.judge._client import ChatMessage, Completion, token_count
from gamut_eval.judge._prompt import RESPONSE_FORMAT, cache_rules, prompt_cache_key
from gamut_eval.judge._settings import JudgeSettings

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
        prompt_tokens=token_count(usage.get("prompt_tokens")),
        completion_tokens=token_count(usage.get("completion_tokens")),
        cached_tokens=token_count(details.get("cached_tokens")),
        latency_s=latency_s,
        transport_attempts=transport_attempts,
        refusal=refusal if isinstance(refusal, str) else None,
        raw=body,
        truncated=choice.get("finish_reason") == "length",
    )


Structured = Literal["json_schema", "json_object", "none"]
REASONING_OUTPUT_TOKENS = 4096
"""The least output budget a reasoning model gets: its hidden reasoning counts against
``max_completion_tokens``, and a budget sized for the verdict alone (400 tokens) can be
spent before any verdict is written."""
_DEGRADE: dict[Structured, Structured] = {"json_schema": "json_object", "json_object": "none"}
_REASONING = re.compile(r"^(?:o\d(?:-|$)|o\d[a-z]|gpt-5)", re.IGNORECASE)
"""OpenAI reasoning model names: o1, o1-mini, o3, o3-pro, o4-mini, gpt-5, gpt-5-mini..."""
_REFUSAL = (
    "unsupported", "not supported", "does not support", "unknown", "unrecognized",
    "not allowed", "extra inputs", "invalid", "only the default", "not permitted",
)  # fmt: skip
_FORMAT_WORDS = (
    "response_format", "output_format", "json_schema", "json_object", "structured output", "schema",
)  # fmt: skip


def refuses_structured_output(status: int, message: str) -> bool:
    """Whether an error reply (``status``, the provider's ``message``) refuses the way the
    structured output was asked for (the judge's clients and the build share this rule)."""
    text = message.lower()
    if not any(word in text for word in _REFUSAL) and status < 500:
        return False
    return any(word in text for word in _FORMAT_WORDS)


def next_structured(current: Structured) -> Structured | None:
    """The next step down from ``current`` (``None``: nothing is left to drop)."""
    return _DEGRADE.get(current)


def is_reasoning_model(model_name: str) -> bool:
    """Whether ``model_name`` is an OpenAI reasoning model (by the provider's naming)."""
    return bool(_REASONING.match(model_name.rsplit("/", 1)[-1]))


@dataclass
class RequestShape:
    """The parameters one endpoint and model take, and how they were learned."""

    token_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The name the reply-length bound is sent under."""
    temperature: bool = True
    """Whether a temperature is sent (reasoning models take only their default)."""
    structured: Structured = "json_schema"
    """How the verdict schema is asked for."""
    reasoning_effort: str | None = None
    """Sent as ``reasoning_effort`` when set (reasoning models)."""
    output_floor: int = 0
    """The least reply-length bound sent (reasoning models: room for reasoning and the
    verdict), whatever ``max_tokens`` says."""
    cache_key: bool = False
    """Whether ``prompt_cache_key`` is sent (OpenAI's own models with a prompt cache)."""
    corrections: list[str] = field(default_factory=list)
    """What the provider refused and what was sent instead, in order."""

    def response_format(self) -> dict[str, Any] | None:
        spec = RESPONSE_FORMAT["json_schema"]
        if self.structured == "json_schema":
            return RESPONSE_FORMAT
        if self.structured == "json_object":
            return {"type": "json_object", "schema": spec["schema"]}
        return None

    def body(
        self, model_name: str, messages: list[ChatMessage], settings: JudgeSettings
    ) -> dict[str, Any]:
        """The chat-completions body for one request."""
        body: dict[str, Any] = {**settings.request_args, "model": model_name, "messages": messages}
        if self.temperature:
            body["temperature"] = settings.temperature
        body[self.token_field] = max(settings.max_tokens, self.output_floor)
        if self.reasoning_effort is not None:
            body["reasoning_effort"] = self.reasoning_effort
        if self.cache_key:
            body["prompt_cache_key"] = prompt_cache_key(messages)
        response_format = self.response_format() if settings.structured_output else None
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def correct(self, status: int, message: str) -> str | None:
        """Adapt to a refusal (``status``, the provider's ``message``); the correction made,
        or None when the message names nothing this shape can change."""
        text = message.lower()
        if not any(word in text for word in _REFUSAL) and status < 500:
            return None
        change = self._correction(text)
        if change is not None:
            self.corrections.append(f"HTTP {status} ({message[:160]}): {change}")
        return change

    def _correction(self, text: str) -> str | None:
        if "max_tokens" in text and self.token_field == "max_tokens":
            self.token_field = "max_completion_tokens"
            self.output_floor = REASONING_OUTPUT_TOKENS
            return (
                "sent max_completion_tokens instead of max_tokens (at least "
                f"{REASONING_OUTPUT_TOKENS}, room for the model's reasoning)"
            )
        if "temperature" in text and self.temperature:
            self.temperature = False
            return "left the temperature out (the model takes only its default)"
        if "reasoning_effort" in text and self.reasoning_effort is not None:
            self.reasoning_effort = None
            return "left reasoning_effort out"
        if "prompt_cache_key" in text and self.cache_key:
            self.cache_key = False
            return "left prompt_cache_key out"
        lower = next_structured(self.structured)
        if any(word in text for word in _FORMAT_WORDS) and lower is not None:
            before, self.structured = self.structured, lower
            after = "no response_format" if self.structured == "none" else self.structured
            return f"asked for the verdict schema as {after} instead of {before}"
        return None


def initial_shape(model_name: str, settings: JudgeSettings) -> RequestShape:
    """The shape the model's name (and the judge's provider) suggests, before the provider
    has said anything."""
    rules = cache_rules(settings.judge)
    cache_key = rules is not None and rules.routing_key
    if is_reasoning_model(model_name):
        return RequestShape(
            token_field="max_completion_tokens",
            temperature=False,
            reasoning_effort=settings.reasoning_effort,
            output_floor=REASONING_OUTPUT_TOKENS,
            cache_key=cache_key,
        )
    return RequestShape(cache_key=cache_key)
