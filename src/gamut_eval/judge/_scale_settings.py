"""Typed options of the scale-out judge backends (provider batch files, Ray).

Kept apart from ``JudgeSettings`` on purpose: those settings describe *what* is asked of a
judge (and feed the cache keys' neighbourhood); these describe *how* the requests travel,
and none of them changes a verdict. Merge order, as for every config: flag > argument >
default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OPENAI_BATCH_MAX_BYTES", "OPENAI_BATCH_MAX_REQUESTS", "BatchSettings", "RaySettings"]

OPENAI_BATCH_MAX_REQUESTS = 50_000
"""Requests per batch input file that OpenAI's Batch API accepts."""
OPENAI_BATCH_MAX_BYTES = 200 * 1000 * 1000
"""Bytes per batch input file that OpenAI's Batch API accepts (200 MB)."""


class BatchSettings(BaseModel):
    """How judge requests are written, submitted and collected as provider batch files."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    directory: Path | None = None
    """Where request and result files are kept (default: ``<store>.batches/`` beside the
    store). Request files stay until their batch is ingested, so a restart can read them."""
    max_requests: Annotated[int, Field(ge=1)] = OPENAI_BATCH_MAX_REQUESTS
    """Requests per batch file; a new file is started beyond it."""
    max_bytes: Annotated[int, Field(ge=4096)] = OPENAI_BATCH_MAX_BYTES
    """Bytes per batch file; a new file is started beyond it."""
    poll_interval_s: Annotated[float, Field(gt=0)] = 30.0
    """Seconds between status polls of a submitted batch."""
    max_wait_s: Annotated[float, Field(gt=0)] | None = None
    """Stop waiting after this long (batches stay recorded; rerun to collect them).
    None waits until every batch has finished."""
    max_active: Annotated[int, Field(ge=1)] | None = None
    """Batches in flight at once (providers cap the tokens enqueued per model); None
    submits every file at once."""
    completion_window: str = "24h"
    """The ``completion_window`` sent when a batch is created."""


class RaySettings(BaseModel):
    """How judge requests are spread over a Ray cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    address: str | None = None
    """Ray cluster address (``auto``, ``ray://head:10001``); None starts or joins a local
    instance as ``ray.init()`` does."""
    engine: Literal["http", "vllm"] = "http"
    """``http``: Ray actors call OpenAI-compatible endpoints with the fast executor;
    ``vllm``: ``ray.data.llm`` runs vLLM engines inside the Ray job (needs GPUs)."""
    endpoints: tuple[str, ...] = ()
    """Base URLs of OpenAI-compatible replicas (http engine); responses are spread over
    them round-robin, all checks of one response to the same replica. Empty: the judge's
    own endpoint."""
    workers: Annotated[int, Field(ge=1, le=4096)] = 2
    """Ray actors calling endpoints (http) or vLLM engine replicas (vllm)."""
    worker_concurrency: Annotated[int, Field(ge=1, le=4096)] = 64
    """Requests in flight per actor (http engine)."""
    responses_per_batch: Annotated[int, Field(ge=1)] = 16
    """Responses per Ray Data batch: all checks of a response travel together, so the
    replica that judges them sees the shared prefix back to back and its cache hits."""
    responses_per_wave: Annotated[int, Field(ge=1)] = 20_000
    """Responses handed to Ray per dataset (bounds the driver's memory on huge runs)."""
    vllm_model: str | None = None
    """Model source for vLLM engines (default: the judge's model name)."""
    vllm_tensor_parallel: Annotated[int, Field(ge=1)] = 1
    """GPUs per vLLM engine."""
    vllm_batch_size: Annotated[int, Field(ge=1)] = 64
    """Rows per batch sent to a vLLM engine."""
