"""The ``inspect`` client: judge requests sent through Inspect AI's model API, and its failures.

Errors: how failures that escape Inspect AI's model API are classified for the judge.
Inspect retries what its provider calls transient, so whatever escapes is final: it is
sorted into credentials rejected (the run stops, naming the variable to set), the request
refused (unscored at once, not retried) or the provider unavailable (unscored).
Exception classes are matched by name and status, so no optional provider SDK has to be
imported.

The executor: the same rendered requests the fast OpenAI-compatible executor sends, for
every provider Inspect supports (Anthropic and Google natively, Bedrock, Azure, ...), with
Inspect's own provider features: retries with backoff, per-provider connection limits, and
prompt caching (``cache_prompt``). Inspect costs ~20 ms of client CPU per call
(docs/architecture.md, decisions), so this is the fallback for providers without an
OpenAI-compatible endpoint, not the default.

Event loops: Inspect's provider clients (httpx, the vendor SDKs) bind to the loop they first
run in, so an executor creates its ``Model`` lazily, inside the first ``complete()`` (or
``async with``), and refuses to be used from any other loop afterwards. Create one executor
per loop. ``get_model(..., memoize=False)`` keeps the model out of Inspect's process-wide
model cache, so ``aclose()`` can close it without breaking anyone else. Inspect's connection
semaphore is process-wide per provider account: the first model created sets its size.

``inspect_ai`` is imported only when a model is created: it is heavy, and importing
``gamut_eval.judge`` must stay cheap.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Self

from gamut_eval.errors import JudgeError
from gamut_eval.judge._client import (
    ChatMessage,
    Completion,
    JudgeAuthError,
    JudgeCallError,
    JudgeRequestRejected,
    JudgeUnavailable,
)
from gamut_eval.judge._settings import JudgeSettings

if TYPE_CHECKING:
    from inspect_ai.model import (
        ChatMessage as InspectMessage,
        Content,
        GenerateConfig,
        Model,
        ModelOutput,
        ResponseSchema,
    )

# -- error classification ----------------------------------------------------------------

_AUTH_ERROR_NAMES = frozenset({"AuthenticationError", "PermissionDeniedError"})
"""Class names the openai, anthropic and mistral SDKs use for 401 / 403 (matched by name
so that no optional SDK has to be imported)."""

_AUTH_PHRASES = ("api key not valid", "api_key_invalid")
"""Google answers a bad key with 400 INVALID_ARGUMENT, not 401."""

_BAD_REQUEST_NAMES = frozenset({"BadRequestError", "UnprocessableEntityError", "NotFoundError"})

_RETRYABLE_STATUS = frozenset({408, 409, 429})

_KEY_VARS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "grok": "XAI_API_KEY",
    "groq": "GROQ_API_KEY",
    "together": "TOGETHER_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "azureai": "AZUREAI_API_KEY",
    "bedrock": "AWS credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)",
}
"""Fallback when the provider's ``api_key_vars`` are unknown (no model, or an empty list)."""


def causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception, the last attempt inside a tenacity ``RetryError``, and explicit causes
    (Inspect raises ``ModelGenerateError`` from the provider's error)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        last_exception = getattr(getattr(current, "last_attempt", None), "exception", None)
        inner = last_exception() if callable(last_exception) else None
        current = inner if isinstance(inner, BaseException) else current.__cause__


def attempts_of(exc: BaseException) -> int:
    last_attempt = getattr(exc, "last_attempt", None)
    number = getattr(last_attempt, "attempt_number", 1)
    return number if isinstance(number, int) else 1


def _status(exc: BaseException) -> int | None:
    # status_code: openai/anthropic SDKs and ModelGenerateError; code: google-genai
    for attr in ("status_code", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def is_auth_failure(exc: BaseException, model: Model | None) -> bool:
    """Credentials rejected: by class name, HTTP status, Google's 400 wording, or the
    provider's own test (e.g. Bedrock's UnrecognizedClientException)."""
    if type(exc).__name__ in _AUTH_ERROR_NAMES or _status(exc) in (401, 403):
        return True
    if _status(exc) == 400 and any(p in _message(exc).lower() for p in _AUTH_PHRASES):
        return True
    api = getattr(model, "api", None)
    try:
        return bool(api is not None and api.is_auth_failure(exc))
    except Exception:  # classification must never hide the original error
        return False


def is_bad_request(exc: BaseException) -> bool:
    status = _status(exc)
    if status is not None and 400 <= status < 500:
        return status not in _RETRYABLE_STATUS
    return type(exc).__name__ in _BAD_REQUEST_NAMES


def _message(exc: BaseException) -> str:
    # never str() of Inspect's ModelGenerateError: it embeds the request, and so the
    # untrusted response under judgement; its provider_message is the provider's words
    return str(getattr(exc, "provider_message", None) or exc).strip()


def describe(exc: BaseException) -> str:
    status = _status(exc)
    code = f" {status}" if status is not None else ""
    return f"{type(exc).__name__}{code}: {_message(exc)[:300]}"


def _provider(model: str) -> str:
    return model.split("/", 1)[0]


def key_hint(model: str, model_obj: Model | None) -> str:
    names = list(getattr(getattr(model_obj, "api", None), "api_key_vars", None) or [])
    if not names:
        fallback = _KEY_VARS.get(_provider(model))
        return f"set {fallback}" if fallback else "check the provider's credentials"
    others = f" (or {', '.join(names[1:])})" if len(names) > 1 else ""
    return f"set {names[0]}{others}"


_RICH_MARKUP = re.compile(r"\[/?[a-z ]+\]")


def creation_reason(model: str, exc: Exception) -> tuple[str, bool]:
    """Why Inspect could not create ``model``, in one line (Rich markup removed), and
    whether it is a missing credential (the key hint is then added)."""
    text = _RICH_MARKUP.sub("", str(getattr(exc, "message", None) or exc))
    message = " ".join(text.split()).removeprefix("ERROR: ")
    if type(exc).__name__ == "PrerequisiteError" and "defined in the environment" in message:
        return f"{message} ({key_hint(model, None)})", True
    extra = _EXTRAS.get(_provider(model))
    if type(exc).__name__ == "PrerequisiteError" and "optional dependencies" in message and extra:
        return (
            f"the {_provider(model)} provider's SDK is not installed: "
            f"pip install 'gamut-eval[{extra}]' (or 'gamut-eval[providers]' for all)",
            False,
        )
    return f"cannot create the Inspect model: {message}", False


_EXTRAS = {"anthropic": "anthropic", "google": "google"}
"""Providers whose SDK an extra of gamut-eval installs (``pip install 'gamut-eval[X]'``)."""


def model_creation_error(model: str, exc: Exception) -> JudgeError:
    """Inspect raises ``PrerequisiteError`` for a missing key or package, ``ValueError``
    for an unknown provider; the run cannot proceed either way."""
    reason, credential = creation_reason(model, exc)
    return (JudgeAuthError if credential else JudgeError)(f"judge {model}: {reason}")


class InspectExecutor:
    """An ``Executor`` over Inspect AI's ``Model.generate`` (see the module docstring).

    ``model`` is an Inspect model string (``anthropic/claude-sonnet-4-5``); it is the
    ``judge_id``. Of ``settings`` it reads temperature, max tokens, retries, timeout,
    concurrency (Inspect's ``max_connections``), structured output, prompt caching and
    batch mode. ``model_obj`` uses an existing Inspect ``Model`` instead (tests, custom
    providers); the executor does not close a model it was given.
    """

    def __init__(
        self,
        model: str,
        settings: JudgeSettings | None = None,
        *,
        model_obj: Model | None = None,
    ) -> None:
        self.judge_id = model
        self.config = settings or JudgeSettings(judge=model)
        self._model: Model | None = model_obj
        self._owns_model = model_obj is None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        self._bound_model()  # fail fast on an unknown provider or a missing key
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(
        self,
        messages: list[ChatMessage],
        response_format: dict[str, Any] | None,
        *,
        max_tokens: int | None = None,
    ) -> Completion:
        """One reply; raises ``JudgeCallError`` subclasses or ``JudgeAuthError``."""
        model = self._bound_model()
        inspect_messages = _to_inspect_messages(messages, split_prefix=self._splits_prefix())
        config = self._call_config(response_format)
        if max_tokens is not None:
            config.max_tokens = max_tokens
        started = time.perf_counter()
        try:
            # cache=False: the verdict store is the only cache, and it never keeps errors
            output = await model.generate(inspect_messages, config=config, cache=False)
        except Exception as exc:
            raise self._map_exception(exc) from exc
        return _to_completion(output, time.perf_counter() - started)

    async def aclose(self) -> None:
        """Close the provider client of a model this executor created."""
        model, self._model, self._closed = self._model, None, True
        if model is not None and self._owns_model:
            # Model has no aclose(); its async exit closes the API client once
            await model.__aexit__(None, None, None)

    # -- model lifecycle -----------------------------------------------------------------

    def _bound_model(self) -> Model:
        if self._closed:
            raise RuntimeError(f"inspect executor for {self.judge_id} is closed")
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError(
                f"inspect executor for {self.judge_id} was first used in another event loop; "
                "its provider client is bound to that loop (create one executor per loop)"
            )
        if self._model is None:
            self._model = self._create_model()
        return self._model

    def _create_model(self) -> Model:
        from inspect_ai.model import get_model

        try:
            return get_model(self.judge_id, config=self._base_config(), memoize=False)
        except Exception as exc:
            raise model_creation_error(self.judge_id, exc) from exc

    def _base_config(self) -> GenerateConfig:
        from inspect_ai.model import GenerateConfig

        cfg = self.config
        timeout = max(1, round(cfg.timeout_s))
        return GenerateConfig(
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            max_retries=cfg.max_retries,
            timeout=timeout,
            # without it a hung connection waits for the SDK's own timeout (10 min for openai)
            attempt_timeout=timeout,
            max_connections=cfg.concurrency,
            cache_prompt=cfg.cache_prompt,
            # a refusal must come back as an output (-> JudgeRequestRejected), not as the
            # ModelRefusalError an enclosing eval's fail_on_refusal would make it
            fail_on_refusal=False,
            batch=cfg.inspect_batch or None,
            extra_body=dict(cfg.request_args) or None,
        )

    def _call_config(self, response_format: dict[str, Any] | None) -> GenerateConfig:
        # the full config on every call, so it also applies to a model we were given
        config = self._base_config()
        if self.config.structured_output and response_format is not None:
            config.response_schema = _response_schema(response_format)
        return config

    def _splits_prefix(self) -> bool:
        provider = self.judge_id.split("/", 1)[0]
        return self.config.cache_prompt is not False and provider == "anthropic"

    # -- failures ------------------------------------------------------------------------

    def _map_exception(self, exc: Exception) -> JudgeCallError | JudgeAuthError:
        """Classify what escaped Inspect's own retries (it retries what its provider calls
        transient, so anything else that escapes is final)."""
        attempts = attempts_of(exc)
        chain = list(causes(exc))
        if any(is_auth_failure(e, self._model) for e in chain):
            return JudgeAuthError(
                f"judge {self.judge_id}: the provider rejected the credentials "
                f"({describe(chain[-1])}); {key_hint(self.judge_id, self._model)}"
            )
        if any(is_bad_request(e) for e in chain):
            return JudgeRequestRejected(f"request rejected: {describe(chain[-1])}", attempts)
        return JudgeUnavailable(f"gave up: {describe(chain[-1])}", attempts)


# -- requests ----------------------------------------------------------------------------

_FENCE_END = re.compile(r"<<<END RESPONSE [0-9a-f]{32}>>>\n\n")
"""The closing fence ``render_response`` writes after the response. The response itself
cannot contain it (runs of '<' are broken up), so its last match ends the part of a request
shared by all checks of one response."""


def _to_inspect_messages(
    messages: list[ChatMessage], *, split_prefix: bool
) -> list[InspectMessage]:
    """OpenAI-style messages as Inspect messages, content unchanged.

    ``split_prefix``: a text-only user message is sent as two text blocks, the per-response
    prefix and the check. Inspect's Anthropic provider marks the second-to-last block as a
    cache breakpoint, so every check of one response then reads the prefix from the cache;
    as one string the request has no breakpoint before the varying check. (Image requests
    are already in parts, with the check last.)
    """
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    # assistant: a re-ask may replay the judge's malformed reply before correcting it
    classes = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    converted: list[InspectMessage] = []
    for message in messages:
        role = message.get("role")
        if role not in classes:
            raise JudgeRequestRejected(f"unsupported chat message role {role!r}")
        content = _content(message.get("content"))
        if split_prefix and role == "user" and isinstance(content, str):
            content = _split_at_prefix(content)
        converted.append(classes[role](content=content))
    return converted


def _content(content: Any) -> str | list[Content]:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [_part(part) for part in content]
    raise JudgeRequestRejected(f"unsupported message content of type {type(content).__name__}")


def _part(part: Any) -> Content:
    from inspect_ai.model import ContentImage, ContentText

    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return ContentText(text=part["text"])
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        # Inspect requires inline media at its API boundary; say so before any call is made
        if not isinstance(url, str) or not url.startswith("data:"):
            raise JudgeRequestRejected("image parts must carry a data: URL")
        detail = image.get("detail", "auto") if isinstance(image, dict) else "auto"
        if detail not in _IMAGE_DETAILS:
            raise JudgeRequestRejected(f"unsupported image detail {detail!r}")
        return ContentImage(image=url, detail=detail)
    raise JudgeRequestRejected(f"unsupported content part {kind!r}")


_IMAGE_DETAILS = frozenset({"auto", "low", "high", "original"})


def _split_at_prefix(text: str) -> str | list[Content]:
    from inspect_ai.model import ContentText

    ends = [match.end() for match in _FENCE_END.finditer(text)]
    if not ends or ends[-1] == len(text):
        return text
    return [ContentText(text=text[: ends[-1]]), ContentText(text=text[ends[-1] :])]


def _response_schema(response_format: dict[str, Any]) -> ResponseSchema:
    """An OpenAI ``json_schema`` response_format as an Inspect ``ResponseSchema``."""
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    spec = response_format.get("json_schema")
    if response_format.get("type") != "json_schema" or not isinstance(spec, dict):
        raise JudgeRequestRejected("response_format must be an OpenAI json_schema format")
    return ResponseSchema(
        name=spec.get("name", "response"),
        json_schema=JSONSchema.model_validate(spec["schema"]),
        description=spec.get("description"),
        strict=spec.get("strict"),
    )


# -- replies -----------------------------------------------------------------------------


def _to_completion(output: ModelOutput, wall_s: float) -> Completion:
    _raise_for_output(output)
    usage = output.usage
    cached = (usage.input_tokens_cache_read or 0) if usage else 0
    # Inspect counts cache reads and writes apart from input_tokens; the OpenAI convention
    # (and Completion.prompt_tokens) counts every prompt token
    prompt = usage.input_tokens + cached + (usage.input_tokens_cache_write or 0) if usage else 0
    return Completion(
        text=output.completion,
        prompt_tokens=prompt,
        completion_tokens=usage.output_tokens if usage else 0,
        cached_tokens=cached,
        cache_write_tokens=(usage.input_tokens_cache_write or 0) if usage else 0,
        # output.time is the successful request alone, when the provider measured it
        latency_s=output.time if output.time is not None else wall_s,
        raw={"model": output.model, "stop_reason": _stop_reason(output)},
    )


def _raise_for_output(output: ModelOutput) -> None:
    """Failures Inspect returns as an output rather than raises."""
    stop = _stop_reason(output)
    if stop == "content_filter":
        raise JudgeRequestRejected(f"content policy: {_refusal_detail(output)}")
    if output.error:
        if stop == "model_length":  # the request is too long: retrying cannot help
            raise JudgeRequestRejected(f"input too long: {output.error}")
        raise JudgeUnavailable(f"provider error: {output.error}")


def _stop_reason(output: ModelOutput) -> str:
    return "unknown" if output.empty else str(output.stop_reason)


def _refusal_detail(output: ModelOutput) -> str:
    details = None if output.empty else output.choices[0].stop_details
    explanation = getattr(details, "explanation", None)
    return str(explanation or output.error or output.completion or "refused")[:300]
