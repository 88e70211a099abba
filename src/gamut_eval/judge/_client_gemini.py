"""The fast judge client for Google's Gemini API
(``POST {base}/models/{model}:generateContent``).

The same transport as the other fast clients (``_client_http.HttpExecutor``: one session, AIMD
concurrency, rate buckets, Retry-After, backoff with full jitter); only the wire format
differs:

- header ``x-goog-api-key`` (from ``GOOGLE_API_KEY``, as in Inspect, or ``GEMINI_API_KEY``);
- the system prompt goes in ``systemInstruction``; the first user turn is sent as parts:
  the per-response prefix (question and fenced answer), then the check, last, so the
  shared prefix is what Gemini's implicit prompt cache can match (from 2,048 tokens on
  Gemini 2.5, 4,096 on later models: ``_prompt.cache_rules``; the prompt variant that gets an
  answer there is ``_prompt.prompt_variant``'s choice). The implicit cache needs no mark
  and bills no write. Images become
  ``inlineData`` parts; a re-ask's turns follow as ``model`` and ``user`` turns;
- structured output as ``responseMimeType: application/json`` with ``responseSchema``:
  the verdict schema without ``additionalProperties``, which Gemini's schema subset does
  not take.

Thinking models (``gemini-2.5*``, ``gemini-3*``) spend thinking tokens out of
``maxOutputTokens``: with the usual 400-token budget a model that thinks first can stop
at ``MAX_TOKENS`` before writing any verdict. So for them ``maxOutputTokens`` is at least
4096, and 2.5 models get ``thinkingConfig.thinkingBudget`` of 1024 tokens (some 2.5 models
cannot turn thinking off, and grading one check needs little of it), which leaves room for
the verdict. Gemini 3 models take no token budget (they have thinking levels); the larger
``maxOutputTokens`` is what leaves them room.

Replies: the text parts of ``candidates[0].content`` joined, thought parts skipped;
``usageMetadata`` gives the prompt, cached and candidate token counts. A ``finishReason``
of SAFETY, PROHIBITED_CONTENT, BLOCKLIST (or SPII) and a ``promptFeedback.blockReason``
reject the request as a content-policy refusal; ``MAX_TOKENS`` with no text is an empty
reply, which the usual re-ask and unscored path handles. Errors (``{"error": {"code",
"message", "status"}}``): 429 ``RESOURCE_EXHAUSTED`` throttles and is retried after
Retry-After or the error's ``retryDelay``; 5xx are retried with backoff; 400 "API key not
valid", 401 and 403 stop the run naming the key variable; other 400/404 reject the request.
"""

from __future__ import annotations

import json
import re
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
from gamut_eval.judge._prompt import RESPONSE_FORMAT, conversation
from gamut_eval.judge._resolve import Endpoint
from gamut_eval.judge._settings import JudgeSettings

_USER_AGENT = "gamut-eval (fast judge executor, gemini)"
THINKING_MIN_OUTPUT_TOKENS = 4096
THINKING_BUDGET = 1024
_POLICY_FINISH = frozenset({"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"})
_RETRYABLE_4XX = frozenset({408, 409})
_MAX_ERROR_CHARS = 500
_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s$")


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON schema in Gemini's subset: ``additionalProperties`` removed at every level."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "additionalProperties":
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            out[key] = gemini_schema(value)
        else:
            out[key] = value
    return out


VERDICT_SCHEMA = gemini_schema(RESPONSE_FORMAT["json_schema"]["schema"])


def _thinking_family(model_name: str) -> str | None:
    name = model_name.rsplit("/", 1)[-1].lower()
    if name.startswith("gemini-2.5"):
        return "2.5"
    if name.startswith("gemini-3"):
        return "3"
    return None


def generation_config(model_name: str, settings: JudgeSettings, structured: bool) -> dict[str, Any]:
    """``generationConfig`` for ``model_name`` (see the module docstring on thinking)."""
    config: dict[str, Any] = {**settings.request_args, "temperature": settings.temperature}
    family = _thinking_family(model_name)
    config["maxOutputTokens"] = (
        max(settings.max_tokens, THINKING_MIN_OUTPUT_TOKENS) if family else settings.max_tokens
    )
    if family == "2.5":
        config["thinkingConfig"] = {"thinkingBudget": THINKING_BUDGET}
    if structured:
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = VERDICT_SCHEMA
    return config


def _image(url: str) -> dict[str, Any]:
    if not url.startswith("data:"):
        raise JudgeRequestRejected("the Gemini client sends images as data URLs only")
    header, _, data = url.partition(",")
    mime_type = header[5:].split(";", 1)[0] or "image/png"
    return {"inlineData": {"mimeType": mime_type, "data": data}}


def _part(kind: str, value: str) -> dict[str, Any]:
    return {"text": value} if kind == "text" else _image(value)


def _turn(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content if content.strip() else EMPTY_TURN}]
    if isinstance(content, list) and content:
        return [_part(*content_part(part)) for part in content]
    return [{"text": EMPTY_TURN}]


def gemini_body(
    model_name: str, messages: list[ChatMessage], settings: JudgeSettings, structured: bool
) -> dict[str, Any]:
    """A ``generateContent`` body for OpenAI-style ``messages`` (as ``render_messages`` and
    the re-ask write them)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for role, content in conversation(messages):
        if role == "system":
            system.append({"text": content})
        elif role == "first":  # the shared prefix, then the check
            contents.append({"role": "user", "parts": [_part(*part) for part in content]})
        else:
            contents.append(
                {"role": "model" if role == "assistant" else "user", "parts": _turn(content)}
            )
    body: dict[str, Any] = {}
    if system:
        body["systemInstruction"] = {"parts": system}
    body["contents"] = contents
    body["generationConfig"] = generation_config(model_name, settings, structured)
    return body


def completion_from_gemini(
    body: Any, *, latency_s: float = 0.0, transport_attempts: int = 1
) -> Completion | str | None:
    """A ``generateContent`` reply as a ``Completion``; a reason starting ``content
    policy`` when Gemini blocked the prompt or the reply; None when it is not a reply."""
    if not isinstance(body, dict):
        return None
    feedback = body.get("promptFeedback")
    block = feedback.get("blockReason") if isinstance(feedback, dict) else None
    if block:
        return f"content policy: Gemini blocked the judge prompt (blockReason={block})"
    candidates = body.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return None
    candidate = candidates[0]
    finish = candidate.get("finishReason")
    if finish in _POLICY_FINISH:
        return f"content policy: Gemini filtered the judge's reply (finishReason={finish})"
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    text = "".join(
        str(part.get("text", ""))
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, dict) and not part.get("thought")
    )
    usage = body.get("usageMetadata") or {}
    return Completion(
        text=text,
        prompt_tokens=token_count(usage.get("promptTokenCount")),
        completion_tokens=token_count(usage.get("candidatesTokenCount")),
        cached_tokens=token_count(usage.get("cachedContentTokenCount")),
        latency_s=latency_s,
        transport_attempts=transport_attempts,
        raw=body,
        truncated=finish == "MAX_TOKENS",
    )


def gemini_error(raw: bytes) -> tuple[str, str, float | None]:
    """``(message, status, retryDelay seconds or None)`` of a Gemini error body."""
    try:
        payload = json.loads(raw)
    except ValueError:
        text = raw[:_MAX_ERROR_CHARS].decode("utf-8", "replace").strip()
        return text or "(empty body)", "", None
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return json.dumps(payload)[:_MAX_ERROR_CHARS], "", None
    delay = None
    for detail in error.get("details") or []:
        match = (
            _DELAY.match(str(detail.get("retryDelay", ""))) if isinstance(detail, dict) else None
        )
        if match:
            delay = float(match.group(1))
    message = str(error.get("message") or json.dumps(error))[:_MAX_ERROR_CHARS]
    return message, str(error.get("status") or ""), delay


class GeminiExecutor(HttpExecutor):
    """The fast judge client for ``google/<model>`` judges (``Executor`` protocol).

    Use as ``async with GeminiExecutor(endpoint, settings) as judge`` or call
    ``aclose()``; ``endpoint`` comes from ``resolve_endpoint("google/...")``.
    """

    def __init__(self, endpoint: Endpoint, settings: JudgeSettings | None = None) -> None:
        headers = {"content-type": "application/json", "User-Agent": _USER_AGENT}
        if endpoint.api_key:
            headers["x-goog-api-key"] = endpoint.api_key
        url = f"{endpoint.base_url}/models/{endpoint.model_name}:generateContent"
        super().__init__(endpoint, settings, url, headers)

    def _encode(
        self, messages: list[ChatMessage], structured: bool, max_tokens: int | None = None
    ) -> tuple[bytes, int]:
        settings = with_bound(self.config, max_tokens)
        body = gemini_body(self.endpoint.model_name, messages, settings, structured)
        return json_body(body), 0

    def _read(self, payload: Any, latency_s: float, attempt: int) -> Completion | str | None:
        return completion_from_gemini(payload, latency_s=latency_s, transport_attempts=attempt)

    def _failure(
        self, status: int, raw: bytes, headers: Mapping[str, str], attempt: int
    ) -> Transient | Refused:
        message, kind, delay = gemini_error(raw)
        if status == 429 or kind == "RESOURCE_EXHAUSTED":
            wait = retry_after_s(headers)
            return Transient(
                f"HTTP {status}: {message}",
                throttled=True,
                retry_after_s=wait if wait is not None else delay,
            )
        if status >= 500 or status in _RETRYABLE_4XX:
            return Transient(f"HTTP {status}: {message}", retry_after_s=retry_after_s(headers))
        if status in (401, 403) or "api key not valid" in message.lower():
            raise self._auth_error(status, message)
        return Refused(status, message)
