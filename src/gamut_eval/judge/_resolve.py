"""A judge setting, resolved once: its backend, its endpoint, the client that reaches it.

Endpoints. Users name judges the way they name models in ``inspect eval``
(``openai/gpt-4.1-mini``, ``vllm/Qwen/Qwen3-8B``, ``openai-api/deepseek/deepseek-chat``),
with the same environment variables, so one set of credentials serves both generation and
judging. Providers that speak the OpenAI chat-completions wire format, Anthropic (its
Messages API) and Google (the Gemini API's ``generateContent``) go to the fast clients;
every other provider goes through Inspect's model API (``default_backend``).
``resolve_endpoint`` turns a name into an ``Endpoint``.

The judge. ``resolve_judge`` turns ``JudgeSettings`` (and a backend name, when a command
picks one: ``dry-run``, say) into a frozen ``ResolvedJudge`` that every later step reads.
``make_backend`` makes the backend from it (by the registry, ``_registry.BACKENDS``), the
probe (``_probe.py``) sends its request with the client it names and returns it again
carrying the learned request shape, and the online backend opens its clients from it.
Nothing after this works out the backend, the endpoint or the client again, so a backend's
name and the client it sends with cannot disagree: ``inspect`` always sends through
Inspect AI. A backend's factory is handed the judge already resolved and the options
(``BackendOptions``); it works none of that out again.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gamut_eval._extras import model_extras, require_extras
from gamut_eval.errors import InputError
from gamut_eval.judge._client import Executor
from gamut_eval.judge._registry import (
    BACKENDS,
    NATIVE_PROVIDERS,
    OFFLINE_JUDGE,
    PROVIDERS,
    REFERENCE_JUDGE,
    VERDICT_OUTPUT_TOKENS,
    WIRE_NAMES,
    ClientKind,
    Provider,
    Wire,
)
from gamut_eval.judge._settings import ONLINE_BACKENDS, BatchSettings, JudgeSettings, RaySettings

if TYPE_CHECKING:
    from gamut_eval.judge._pass import Backend
    from gamut_eval.judge._wire_openai import RequestShape

OnlineBackendName = Literal["fast", "inspect"]


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


_GEMINI_KEY_FALLBACK = "GEMINI_API_KEY"
"""Gemini's key may also come from ``GEMINI_API_KEY``, which Google's SDK reads."""

FAST_PROVIDERS: frozenset[str] = frozenset({*PROVIDERS, "openai-api", *NATIVE_PROVIDERS})
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


def default_backend(model: str) -> OnlineBackendName:
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
    if provider in NATIVE_PROVIDERS and not openai_only:
        (spec, wire), model_name = NATIVE_PROVIDERS[provider], rest
    elif provider in NATIVE_PROVIDERS:
        raise InputError(
            f"judge model {model!r} speaks {WIRE_NAMES[NATIVE_PROVIDERS[provider][1]]}, not the "
            "OpenAI chat-completions format this backend sends; use the fast or inspect backend"
        )
    elif provider == "openai-api":
        service, model_name = _openai_api_parts(model, rest)
        spec = Provider(service.upper().replace("-", "_"), None)
    elif provider in PROVIDERS and default_backend(model) == "fast":
        spec, model_name = PROVIDERS[provider], rest
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


_BUILT_IN = ("offline", "reference", "dry-run")
"""Backends that send nothing: no endpoint, no client."""
_OPENAI_ONLY = ("batch", "ray")
"""Backends that send OpenAI chat-completion bodies whatever the judge's provider."""


@dataclass(frozen=True)
class ResolvedJudge:
    """One judge as every step after the settings sees it."""

    settings: JudgeSettings
    backend: str
    """The registry name (``fast``, ``inspect``, ``offline``, ``reference``, ``batch``,
    ``ray``, ``dry-run``); ``auto`` is already decided."""
    endpoint: Endpoint | None = None
    """Where requests go; None through Inspect, for the built-in judges and the dry run,
    and when the endpoint could not be resolved (``problem``)."""
    replicas: tuple[Endpoint, ...] = ()
    """The endpoints requests are spread over: ``(endpoint,)``, or one per base URL of a
    Ray pass over several replicas."""
    wire: Wire | None = None
    """The request format the endpoint speaks; None where no endpoint is reached directly."""
    client: ClientKind | None = None
    """The client that answers one request; None for backends that send nothing."""
    problem: str = ""
    """Why a backend that needs an endpoint has none; raised when the endpoint is needed
    (a pass that only ingests batch results needs none)."""
    shape: RequestShape | None = None
    """How the endpoint takes its parameters, as a probe learned it (fast OpenAI client)."""

    @property
    def judge(self) -> str:
        """The judge's model id, as recorded with every verdict."""
        return self.settings.judge

    def require_endpoint(self) -> Endpoint:
        """The endpoint; ``InputError`` saying why when there is none."""
        if self.endpoint is None:
            raise InputError(self.problem or f"judge {self.judge} has no endpoint")
        return self.endpoint


def backend_name(settings: JudgeSettings) -> str:
    """The registry name ``settings`` asks for (``auto``: offline for the offline judge,
    reference for the reference judge, fast where the provider speaks the OpenAI API or is
    Anthropic or Google, inspect otherwise); ``resolve_judge`` is its one caller."""
    if settings.judge == OFFLINE_JUDGE and settings.backend in ONLINE_BACKENDS:
        return "offline"
    if settings.judge == REFERENCE_JUDGE and settings.backend in ONLINE_BACKENDS:
        return "reference"
    if settings.backend != "auto":
        return settings.backend
    return default_backend(settings.judge)


def resolve_judge(
    settings: JudgeSettings, backend: str | None = None, *, replicas: Sequence[str] = ()
) -> ResolvedJudge:
    """``settings`` resolved for ``backend`` (default: the one the settings ask for).

    ``replicas``: base URLs a Ray pass spreads its requests over (default: the judge's
    own). An endpoint that cannot be resolved is not an error yet: the record carries the
    reason (``problem``), raised by the first step that needs the endpoint.
    """
    name = backend or backend_name(settings)
    if name in _BUILT_IN:
        return ResolvedJudge(settings, name)
    if name == "inspect":
        return ResolvedJudge(settings, name, client="inspect")
    openai_only = name in _OPENAI_ONLY
    urls = tuple(replicas) if name == "ray" and replicas else (settings.base_url,)
    try:
        found = tuple(
            resolve_endpoint(settings.judge, base_url=url, openai_only=openai_only) for url in urls
        )
    except InputError as exc:
        problem = str(exc)
        if name == "batch":
            problem = f"the batch backend needs an OpenAI-compatible judge endpoint: {problem}"
        return ResolvedJudge(settings, name, problem=problem)
    endpoint = found[0]
    return ResolvedJudge(settings, name, endpoint, found, endpoint.wire, client=endpoint.wire)


@dataclass(frozen=True)
class BackendOptions:
    """What a backend may need besides the judge settings."""

    batch: BatchSettings = field(default_factory=BatchSettings)
    ray: RaySettings = field(default_factory=RaySettings)
    batch_write_only: bool = False
    """batch: only write the request files (for ``vllm run-batch``); send nothing."""
    batch_ingest: tuple[Path, ...] = ()
    """batch: ingest these result files instead of submitting."""
    prices: Path | None = None
    """dry-run: price table YAML."""
    output_tokens: int = VERDICT_OUTPUT_TOKENS
    """dry-run: expected completion tokens per request."""
    executor_factory: Callable[[JudgeSettings], Executor] | None = None
    """online: make the client (inside the pass's event loop) instead of the one the
    resolved judge names; tests inject fakes here."""
    client_factory: Callable[[Any], Any] | None = None
    """batch: make the batch API client from the endpoint (tests inject fakes here)."""


def require_judge_extras(judges: Sequence[ResolvedJudge]) -> None:
    """``MissingExtra`` naming the install command when a judge's backend needs an extra
    that is not installed: Ray for ``ray``, Inspect AI (and the provider's SDK) for a judge
    sent through Inspect. Checked before any file is written, probe or not."""
    extras: list[str] = []
    features: list[str] = []
    for judge in judges:
        needs: tuple[str, ...] = ()
        if judge.backend == "ray":
            needs = ("ray",)
        elif judge.client == "inspect":
            needs = model_extras(judge.judge)
        if needs:
            extras.extend(needs)
            features.append(f"judge {judge.judge} on the {judge.backend} backend")
    require_extras(extras, ", ".join(dict.fromkeys(features)))


def make_backend(
    judge: JudgeSettings | ResolvedJudge,
    options: BackendOptions | None = None,
    *,
    name: str | None = None,
) -> Backend:
    """The backend for ``judge``: settings are resolved here (``name`` overrides the
    backend they ask for; Ray's replica URLs come from ``options``), a resolved judge is
    used as it is."""
    options = options or BackendOptions()
    if isinstance(judge, ResolvedJudge):
        if name not in (None, judge.backend):
            raise ValueError(f"judge {judge.judge} was resolved for {judge.backend}, not {name}")
        resolved = judge
    else:
        resolved = resolve_judge(judge, name, replicas=options.ray.endpoints)
    if options.executor_factory is None:  # an injected client needs no extra
        require_judge_extras([resolved])
    target = BACKENDS.get(resolved.backend)
    if target is None:
        raise InputError(
            f"unknown judge backend {resolved.backend!r}; choose one of {', '.join(BACKENDS)}"
        )
    module, _, attribute = target.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    backend: Backend = factory(resolved, options)
    return backend
