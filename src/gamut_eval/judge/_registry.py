"""The judge's registry: the backends and the clients by name, each as ``module:attribute``.

A backend or a client is imported only when it is used, so ``import gamut_eval.judge``
stays cheap and optional dependencies (Inspect AI, Ray) load on demand. This module imports
nothing else: ``gamut run --help`` lists the backends' names and the built-in judges'
without loading pydantic.
Adding a backend means writing its module and adding one line to ``BACKENDS``; adding a
client for a new wire protocol, its module and one line to ``CLIENTS`` (and the providers
that speak it in ``_resolve.py``).

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

from typing import Literal

__all__ = [
    "BACKENDS",
    "CLIENTS",
    "OFFLINE_JUDGE",
    "ONLINE_BACKENDS",
    "REFERENCE_JUDGE",
    "BackendName",
]

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

CLIENTS: dict[str, str] = {
    "openai": "gamut_eval.judge._client_openai:OpenAIExecutor",
    "anthropic": "gamut_eval.judge._client_anthropic:AnthropicExecutor",
    "gemini": "gamut_eval.judge._client_gemini:GeminiExecutor",
    "inspect": "gamut_eval.judge._client_inspect:InspectExecutor",
}
"""Client kind (``ResolvedJudge.client``: the wire protocol an endpoint speaks, or
``inspect``) -> ``module:class``. A wire client is made as ``Class(endpoint, settings)``,
Inspect's as ``Class(judge id, settings)``."""
