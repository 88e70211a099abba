"""Judge backends: one module each behind one small protocol (``judge._pass.Backend``).

The registry below names them; a backend's module is imported only when it is used, so
``import gamut_eval.judge`` stays cheap and optional dependencies (Inspect AI, Ray) load
on demand. Adding a backend means writing its module and adding one line here. A factory
is handed the judge already resolved (``judge._resolve.ResolvedJudge``: backend name,
endpoint, client) and the options; it works none of that out again.

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
from gamut_eval.judge._offline import OFFLINE_JUDGE
from gamut_eval.judge._pass import Backend
from gamut_eval.judge._reference import REFERENCE_JUDGE
from gamut_eval.judge._resolve import ResolvedJudge, resolve_judge
from gamut_eval.judge._settings import BatchSettings, JudgeSettings, RaySettings
from gamut_eval.judge._types import Executor

__all__ = [
    "BACKENDS",
    "OFFLINE_JUDGE",
    "REFERENCE_JUDGE",
    "BackendOptions",
    "make_backend",
]

BACKENDS: dict[str, str] = {
    "fast": "gamut_eval.judge.backends._online:online_backend",
    "inspect": "gamut_eval.judge.backends._online:online_backend",
    "offline": "gamut_eval.judge.backends._offline:offline_backend",
    "reference": "gamut_eval.judge.backends._reference:reference_backend",
    "batch": "gamut_eval.judge.backends._batch:batch_backend",
    "ray": "gamut_eval.judge.backends._ray:ray_backend",
    "dry-run": "gamut_eval.judge.backends._dryrun:dry_run_backend",
}
"""Backend name -> ``module:factory``; a factory takes (resolved judge, options)."""


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
    """online: make the client (inside the pass's event loop) instead of the one the
    resolved judge names; tests inject fakes here."""
    client_factory: Callable[[Any], Any] | None = None
    """batch: make the batch API client from the endpoint (tests inject fakes here)."""


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
    target = BACKENDS.get(resolved.backend)
    if target is None:
        raise InputError(
            f"unknown judge backend {resolved.backend!r}; choose one of {', '.join(BACKENDS)}"
        )
    module, _, attribute = target.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    backend: Backend = factory(resolved, options)
    return backend
