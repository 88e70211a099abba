"""The judge's registry: the backends and the clients by name, each as ``module:attribute``.

A backend or a client is imported only when it is used, so ``import gamut_eval.judge``
stays cheap and optional dependencies (Inspect AI, Ray) load on demand. This module imports
nothing else: ``gamut run --help`` lists the backends' names and the built-in judges'
without loading pydantic.
Adding a backend means writing its module and adding one line to ``BACKENDS``. Adding a
provider that speaks the OpenAI chat-completions format is one line in ``PROVIDERS``;
adding one with a wire protocol of its own means writing its client module
(``_client_<wire>.py``) and, here, naming the wire (``Wire``, ``WIRE_NAMES``), its client
(``CLIENTS``) and the provider (``NATIVE_PROVIDERS``).

=========  ===============================================================================
fast       online: lean aiohttp clients for OpenAI-compatible endpoints, Anthropic's
           Messages API and Gemini's generateContent (the default for all three)
inspect    online: any provider Inspect AI supports, through its model API
offline    the built-in deterministic judge (``gamut/offline``), graded in process
reference  the reference judge (``gamut/reference``): the bundled sample's reference labels
batch      provider batch APIs (OpenAI-compatible ``/files`` + ``/batches``), resumable;
           also writes request files for ``vllm run-batch`` and ingests their results
ray        Ray Data over many OpenAI-compatible replicas, or vLLM engines in the job
dry-run    counts requests, tokens and cost; sends nothing
=========  ===============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VERDICT_OUTPUT_TOKENS = 60
"""Completion tokens a dry run expects per judge request (a verdict and a one or two
sentence explanation)."""

BackendName = Literal["auto", "fast", "inspect", "batch", "ray"]
ONLINE_BACKENDS: tuple[str, ...] = ("auto", "fast", "inspect")
"""The backends that answer while the command runs (``gamut run`` offers only these)."""

OFFLINE_JUDGE = "gamut/offline"
"""The built-in deterministic judge (``_builtin.grade_check``), graded in process."""
REFERENCE_JUDGE = "gamut/reference"
"""The reference judge: the bundled sample's reference labels (``_builtin.py``)."""

BACKENDS: dict[str, str] = {
    "fast": "gamut_eval.judge._backend_online:online_backend",
    "inspect": "gamut_eval.judge._backend_online:online_backend",
    "offline": "gamut_eval.judge._builtin:offline_backend",
    "reference": "gamut_eval.judge._builtin:reference_backend",
    "batch": "gamut_eval.judge._backend_batch:batch_backend",
    "ray": "gamut_eval.judge._backend_ray:ray_backend",
    "dry-run": "gamut_eval.judge._backend_dry_run:dry_run_backend",
}
"""Backend name -> ``module:factory``; a factory takes (resolved judge, options)."""

Wire = Literal["openai", "anthropic", "gemini"]
"""The request formats the HTTP clients speak: OpenAI chat completions, Anthropic's
Messages API, Gemini's ``generateContent``."""
ClientKind = Wire | Literal["inspect"]
"""The client one request is sent with: an HTTP client by wire protocol, or Inspect AI's
model API."""

CLIENTS: dict[ClientKind, str] = {
    "openai": "gamut_eval.judge._client_openai:OpenAIExecutor",
    "anthropic": "gamut_eval.judge._client_anthropic:AnthropicExecutor",
    "gemini": "gamut_eval.judge._client_gemini:GeminiExecutor",
    "inspect": "gamut_eval.judge._client_inspect:InspectExecutor",
}
"""Client kind (``ResolvedJudge.client``: the wire protocol an endpoint speaks, or
``inspect``) -> ``module:class``. A wire client is made as ``Class(endpoint, settings)``,
Inspect's as ``Class(judge id, settings)``."""

WIRE_NAMES: dict[Wire, str] = {
    "anthropic": "Anthropic's Messages API",
    "gemini": "Gemini's generateContent API",
}
"""How error messages name a wire protocol other than OpenAI's."""


@dataclass(frozen=True, slots=True)
class Provider:
    """Where a provider's endpoint and key come from."""

    env_prefix: str
    """``OPENAI`` -> ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""
    default_base_url: str | None
    """None: the base URL variable must be set."""


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("OPENAI", "https://api.openai.com/v1"),
    "vllm": Provider("VLLM", "http://localhost:8000/v1"),
    "ollama": Provider("OLLAMA", "http://localhost:11434/v1"),
    "openrouter": Provider("OPENROUTER", "https://openrouter.ai/api/v1"),
    "together": Provider("TOGETHER", "https://api.together.xyz/v1"),
    "groq": Provider("GROQ", "https://api.groq.com/openai/v1"),
    "fireworks": Provider("FIREWORKS", "https://api.fireworks.ai/inference/v1"),
}
"""Providers (the judge name's ``provider/`` prefix) that speak the OpenAI chat-completions
format; any other such service is reachable as ``openai-api/<service>/<model>``."""

NATIVE_PROVIDERS: dict[str, tuple[Provider, Wire]] = {
    # Anthropic's Messages API: ``{base}/v1/messages``, key in ``x-api-key``.
    "anthropic": (Provider("ANTHROPIC", "https://api.anthropic.com"), "anthropic"),
    # The Gemini API: ``{base}/models/{model}:generateContent``, key in ``x-goog-api-key``
    # (``GOOGLE_API_KEY`` as in Inspect, or ``GEMINI_API_KEY``, which Google's SDK reads).
    "google": (Provider("GOOGLE", "https://generativelanguage.googleapis.com/v1beta"), "gemini"),
}
"""Providers that speak a wire protocol of their own, and which."""
