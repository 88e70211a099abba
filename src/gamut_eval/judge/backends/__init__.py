"""Judge backends: one module each behind one small protocol (``judge._pass.Backend``).

The registry below names them; a backend's module is imported only when it is used, so
``import gamut_eval.judge`` stays cheap and optional dependencies (Inspect AI, Ray) load
on demand. Adding a backend means writing its module and adding one line here.

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

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gamut_eval.errors import InputError
from gamut_eval.judge._endpoints import default_backend
from gamut_eval.judge._offline import OFFLINE_JUDGE
from gamut_eval.judge._pass import Backend
from gamut_eval.judge._reference import REFERENCE_JUDGE
from gamut_eval.judge._settings import ONLINE_BACKENDS, BatchSettings, JudgeSettings, RaySettings
from gamut_eval.judge._types import Executor

__all__ = [
    "BACKENDS",
    "OFFLINE_JUDGE",
    "REFERENCE_JUDGE",
    "BackendOptions",
    "backend_name",
    "make_backend",
]

BACKENDS: dict[str, str] = {
    "fast": "gamut_eval.judge.backends._online:fast_backend",
    "inspect": "gamut_eval.judge.backends._online:inspect_backend",
    "offline": "gamut_eval.judge.backends._offline:offline_backend",
    "reference": "gamut_eval.judge.backends._reference:reference_backend",
    "batch": "gamut_eval.judge.backends._batch:batch_backend",
    "ray": "gamut_eval.judge.backends._ray:ray_backend",
    "dry-run": "gamut_eval.judge.backends._dryrun:dry_run_backend",
}
"""Backend name -> ``module:factory``; a factory takes (settings, options)."""


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
    output_tokens: int = 60
    """dry-run: expected completion tokens per request."""
    executor_factory: Callable[[JudgeSettings], Executor] | None = None
    """online: make the client (inside the pass's event loop); tests inject fakes here."""
    client_factory: Callable[[Any], Any] | None = None
    """batch: make the batch API client from the endpoint (tests inject fakes here)."""
    shape: Any = None
    """online: the request shape a probe learned (``_shape.RequestShape``), if any."""


def backend_name(settings: JudgeSettings, *, dry_run: bool = False) -> str:
    """The registry name ``settings`` asks for (``auto``: offline for the offline judge,
    reference for the reference judge, fast where the provider speaks the OpenAI API or is
    Anthropic or Google, inspect otherwise)."""
    if dry_run:
        return "dry-run"
    if settings.judge == OFFLINE_JUDGE and settings.backend in ONLINE_BACKENDS:
        return "offline"
    if settings.judge == REFERENCE_JUDGE and settings.backend in ONLINE_BACKENDS:
        return "reference"
    if settings.backend != "auto":
        return settings.backend
    return default_backend(settings.judge)


def make_backend(
    settings: JudgeSettings, options: BackendOptions | None = None, *, name: str | None = None
) -> Backend:
    """The backend ``name`` (default: the one ``settings`` asks for)."""
    name = name or backend_name(settings)
    target = BACKENDS.get(name)
    if target is None:
        raise InputError(f"unknown judge backend {name!r}; choose one of {', '.join(BACKENDS)}")
    module, _, attribute = target.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    backend: Backend = factory(settings, options or BackendOptions())
    return backend
