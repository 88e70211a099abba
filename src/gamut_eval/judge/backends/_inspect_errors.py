"""How failures that escape Inspect AI's model API are classified for the judge.

Inspect retries what its provider calls transient, so whatever escapes is final: it is
sorted into credentials rejected (the run stops, naming the variable to set), the request
refused (unscored at once, not retried) or the provider unavailable (unscored).
Exception classes are matched by name and status, so no optional provider SDK has to be
imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gamut_eval.errors import JudgeError
from gamut_eval.judge._types import JudgeAuthError

if TYPE_CHECKING:
    from inspect_ai.model import Model

__all__ = [
    "attempts_of",
    "causes",
    "creation_reason",
    "describe",
    "is_auth_failure",
    "is_bad_request",
    "key_hint",
    "model_creation_error",
]

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
