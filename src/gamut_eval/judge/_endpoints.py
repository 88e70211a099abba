"""Judge model names in Inspect AI's convention (``provider/model``) -> an HTTP endpoint.

Users name judges the way they name models in ``inspect eval`` (``openai/gpt-4.1-mini``,
``vllm/Qwen/Qwen3-8B``, ``openai-api/deepseek/deepseek-chat``), with the same environment
variables, so one set of credentials serves both generation and judging. Providers that
speak the OpenAI chat-completions wire format, Anthropic (its Messages API) and Google (the
Gemini API's ``generateContent``) go to the fast clients; every other provider goes through
Inspect's model API (``default_backend``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from gamut_eval.errors import InputError

__all__ = ["FAST_PROVIDERS", "Backend", "Endpoint", "default_backend", "resolve_endpoint"]

Backend = Literal["fast", "inspect"]
Wire = Literal["openai", "anthropic", "gemini"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the fast executor sends one judge's requests."""

    judge_id: str
    """The full model string as the user wrote it (``openai/gpt-4.1-mini``)."""
    provider: str
    """The part before the first ``/`` (``openai``, ``openai-api``, ``vllm``, ...)."""
    model_name: str
    """The ``model`` field of the request body (``gpt-4.1-mini``)."""
    base_url: str
    """Everything before ``/chat/completions`` (``/v1/messages`` for Anthropic,
    ``/models/<model>:generateContent`` for Gemini), without a trailing slash."""
    api_key: str | None = field(repr=False)
    """Sent as ``Authorization: Bearer`` (``x-api-key`` for Anthropic, ``x-goog-api-key``
    for Gemini); None sends no header (local servers)."""
    api_key_env: str
    """The environment variable a user sets to supply the key (named in auth errors)."""
    wire: Wire = "openai"
    """The request format: OpenAI chat completions, Anthropic's Messages API, or Gemini's
    ``generateContent``."""


@dataclass(frozen=True, slots=True)
class _Provider:
    env_prefix: str
    """``OPENAI`` -> ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""
    default_base_url: str | None
    """None: the base URL variable must be set."""


_PROVIDERS: dict[str, _Provider] = {
    "openai": _Provider("OPENAI", "https://api.openai.com/v1"),
    "vllm": _Provider("VLLM", "http://localhost:8000/v1"),
    "ollama": _Provider("OLLAMA", "http://localhost:11434/v1"),
    "openrouter": _Provider("OPENROUTER", "https://openrouter.ai/api/v1"),
    "together": _Provider("TOGETHER", "https://api.together.xyz/v1"),
    "groq": _Provider("GROQ", "https://api.groq.com/openai/v1"),
    "fireworks": _Provider("FIREWORKS", "https://api.fireworks.ai/inference/v1"),
}

_ANTHROPIC = _Provider("ANTHROPIC", "https://api.anthropic.com")
"""Anthropic's Messages API: ``{base}/v1/messages``, key in ``x-api-key``."""

_GOOGLE = _Provider("GOOGLE", "https://generativelanguage.googleapis.com/v1beta")
"""The Gemini API: ``{base}/models/{model}:generateContent``, key in ``x-goog-api-key``
(``GOOGLE_API_KEY`` as in Inspect, or ``GEMINI_API_KEY``, which Google's SDK reads)."""
_GEMINI_KEY_FALLBACK = "GEMINI_API_KEY"

_NATIVE: dict[str, tuple[_Provider, Wire]] = {
    "anthropic": (_ANTHROPIC, "anthropic"),
    "google": (_GOOGLE, "gemini"),
}
_WIRE_NAMES = {"anthropic": "Anthropic's Messages API", "gemini": "Gemini's generateContent API"}

FAST_PROVIDERS: frozenset[str] = frozenset({*_PROVIDERS, "openai-api", *_NATIVE})
"""Providers whose judges default to the fast (plain aiohttp) clients."""

# Inspect routes ``openai/azure/<m>`` and ``openai/bedrock/<m>`` to Azure OpenAI and Bedrock,
# which need their own auth (api-key headers, Azure AD, SigV4): not plain OpenAI wire format.
_OPENAI_SERVICES_VIA_INSPECT = frozenset({"azure", "bedrock"})

_CONVENTION = (
    "judge models are named 'provider/model' as in Inspect AI, for example "
    "'openai/gpt-4.1-mini', 'vllm/Qwen/Qwen3-8B', 'openai-api/<service>/<model>' or "
    "'anthropic/claude-sonnet-4-0' or 'google/gemini-2.5-flash'"
)


def _split(model: str) -> tuple[str, str]:
    provider, sep, rest = model.partition("/")
    if not sep or not provider or not rest:
        raise InputError(f"judge model {model!r} has no provider prefix: {_CONVENTION}")
    return provider, rest


def _env(name: str) -> str | None:
    """An environment variable, with an empty value treated as unset (``FOO= cmd``)."""
    return os.environ.get(name) or None


def _clean_base_url(url: str, wire: Wire = "openai") -> str:
    # Accept a pasted full endpoint URL as well as the usual ``.../v1`` prefix.
    url = url.rstrip("/")
    if wire == "gemini":
        cut = url.find("/models/")
        return url[:cut] if cut >= 0 else url
    suffix = "/v1/messages" if wire == "anthropic" else "/chat/completions"
    return url.removesuffix(suffix)


def _env_prefix(service: str) -> str:
    return service.upper().replace("-", "_")


def default_backend(model: str) -> Backend:
    """``fast`` for OpenAI-compatible providers, Anthropic and Google, ``inspect`` for the
    rest."""
    provider, rest = _split(model)
    if provider == "openai" and rest.partition("/")[0] in _OPENAI_SERVICES_VIA_INSPECT:
        return "inspect"
    return "fast" if provider in FAST_PROVIDERS else "inspect"


def _openai_api_parts(model: str, rest: str) -> tuple[str, str]:
    service, sep, model_name = rest.partition("/")
    if not sep or not service or not model_name:
        raise InputError(
            f"judge model {model!r}: OpenAI-compatible services are named "
            "'openai-api/<service>/<model>', for example 'openai-api/deepseek/deepseek-chat' "
            "(base URL from DEEPSEEK_BASE_URL, key from DEEPSEEK_API_KEY)"
        )
    return service, model_name


def resolve_endpoint(
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    openai_only: bool = False,
) -> Endpoint:
    """The endpoint for ``model``; explicit ``base_url`` / ``api_key`` beat the environment.

    Raises ``InputError`` for a name without a provider, a provider the fast clients do
    not serve, or an ``openai-api`` service whose ``<SERVICE>_BASE_URL`` is unset;
    ``openai_only`` (batch files, Ray replicas) also for an Anthropic or Google judge.
    """
    provider, rest = _split(model)
    wire: Wire = "openai"
    if provider in _NATIVE and not openai_only:
        (spec, wire), model_name = _NATIVE[provider], rest
    elif provider in _NATIVE:
        raise InputError(
            f"judge model {model!r} speaks {_WIRE_NAMES[_NATIVE[provider][1]]}, not the "
            "OpenAI chat-completions format this backend sends; use the fast or inspect backend"
        )
    elif provider == "openai-api":
        service, model_name = _openai_api_parts(model, rest)
        spec = _Provider(_env_prefix(service), None)
    elif provider in _PROVIDERS and default_backend(model) == "fast":
        spec, model_name = _PROVIDERS[provider], rest
    else:
        raise InputError(
            f"judge model {model!r} is not served by the fast executor (it serves "
            f"{', '.join(sorted(FAST_PROVIDERS))}); use the inspect judge backend for it"
        )
    base_var, key_var = f"{spec.env_prefix}_BASE_URL", f"{spec.env_prefix}_API_KEY"
    url = base_url or _env(base_var) or spec.default_base_url
    if url is None:
        raise InputError(
            f"judge model {model!r}: set {base_var} to the service's OpenAI-compatible base "
            "URL (the part before /chat/completions, e.g. https://api.example.com/v1)"
        )
    key = api_key or _env(key_var)
    if key is None and wire == "gemini" and _env(_GEMINI_KEY_FALLBACK):
        key, key_var = _env(_GEMINI_KEY_FALLBACK), _GEMINI_KEY_FALLBACK
    return Endpoint(
        judge_id=model,
        provider=provider,
        model_name=model_name,
        base_url=_clean_base_url(url, wire),
        api_key=key,
        api_key_env=key_var,
        wire=wire,
    )
