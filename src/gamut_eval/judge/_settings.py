"""Every setting of a judge pass, declared once.

Each field holds its default and, in its docstring, its help text. The command-line
options (``gamut_eval.cli._options``, which reads ``model_fields``), configuration files
and the run record (``run.json``) are all derived from these models, so a default is never
restated.
Field metadata ``cli`` names the option where it differs from ``--field-name``
(``None`` keeps a field off the command line).

Three models, on purpose:

- ``JudgeSettings``: what is asked of one judge and how the online clients send it.
- ``BatchSettings`` and ``RaySettings``: how requests travel on the scale-out backends;
  none of them changes a verdict.

Merge order wherever several sources set a value: command-line flag > configuration
file > argument > default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gamut_eval.judge._registry import ONLINE_BACKENDS as ONLINE_BACKENDS, BackendName

OPENAI_BATCH_MAX_REQUESTS = 50_000
"""Requests per batch input file that OpenAI's Batch API accepts."""
OPENAI_BATCH_MAX_BYTES = 200 * 1000 * 1000
"""Bytes per batch input file that OpenAI's Batch API accepts (200 MB)."""

_SETTINGS = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

PromptLayout = Literal["auto", "compact", "guided"]
"""How the judge's instructions are laid out (docs/method.md [J11])."""


def _cli(name: str | None) -> dict[str, str | None]:
    return {"cli": name}


class JudgeSettings(BaseModel):
    """How to judge: which model, through which backend, how hard to push it."""

    model_config = _SETTINGS

    judge: Annotated[str, Field(json_schema_extra=_cli(None))]
    """Judge model in Inspect's naming (``openai/gpt-4.1-mini``, ``openai-api/vllm/qwen``...);
    ``gamut/offline`` is the built-in offline judge."""
    backend: BackendName = "auto"
    """fast: aiohttp client for OpenAI-compatible APIs; inspect: any Inspect provider;
    batch: provider batch APIs (files + batches); ray: Ray Data over many endpoints or vLLM
    engines; auto: fast where the provider speaks the OpenAI API, else inspect."""
    base_url: str | None = None
    """Override the judge endpoint's base URL (not for the inspect backend)."""
    concurrency: Annotated[int, Field(ge=1, le=4096)] = 64
    """Judge requests in flight, at most."""
    adaptive_concurrency: bool = True
    """Fast backend: let latency lower the requests in flight below --concurrency where
    the server only queues them (a self-hosted server starts at 2, or at the slots it
    reports, and finds its pace; a hosted API starts at --concurrency). 429s and timeouts
    lower it either way."""
    rpm: Annotated[int, Field(ge=1)] | None = None
    """Requests-per-minute limit (fast backend)."""
    tpm: Annotated[int, Field(ge=1)] | None = None
    """Tokens-per-minute limit (fast backend)."""
    timeout_s: Annotated[float, Field(gt=0, json_schema_extra=_cli("--timeout"))] = 120.0
    """Seconds per request."""
    max_retries: Annotated[int, Field(ge=0, le=20)] = 6
    """Transport retries (429, 5xx, timeouts)."""
    backoff_base_s: Annotated[float, Field(ge=0, json_schema_extra=_cli(None))] = 0.5
    """Ceiling of the first retry's random delay; it doubles each retry."""
    backoff_max_s: Annotated[float, Field(ge=0, json_schema_extra=_cli(None))] = 60.0
    """Largest backoff ceiling (a server's ``Retry-After`` may exceed it)."""
    retry_after_cap_s: Annotated[
        float, Field(ge=0, json_schema_extra=_cli("--retry-after-cap"))
    ] = 60.0
    """Longest wait a server's Retry-After is honoured for, in seconds; a longer one is
    not waited out: the request is retried on the usual backoff and retries."""
    dead_after_s: Annotated[float, Field(gt=0, json_schema_extra=_cli("--dead-after"))] = 120.0
    """Stop the run when every request to the judge's endpoint has failed (timeouts,
    server errors, lost connections) for this many seconds; what was judged is kept."""
    max_reasks: Annotated[int, Field(ge=0, le=10)] = 2
    """Re-asks after a malformed verdict before a check is unscored."""
    temperature: Annotated[float, Field(ge=0, json_schema_extra=_cli("--judge-temperature"))] = 0.0
    """Sampling temperature of the judge."""
    max_tokens: Annotated[int, Field(ge=16, json_schema_extra=_cli("--judge-max-tokens"))] = 400
    """Upper bound on the judge's reply length, in tokens."""
    reasoning_effort: Annotated[
        Literal["minimal", "low", "medium", "high"] | None,
        Field(json_schema_extra=_cli("--judge-reasoning-effort")),
    ] = None
    """Reasoning effort of a reasoning-model judge (o series, gpt-5); others ignore it."""
    structured_output: bool = True
    """Request the verdict JSON schema via response_format (degraded to what the endpoint
    takes: json_schema, then json_object with the schema, then none)."""
    judge_image: bool = False
    """Show the judge the image (multimodal setting; checks are self-contained, so off by
    default)."""
    prompt_layout: Annotated[PromptLayout, Field(json_schema_extra=_cli("--judge-prompt"))] = "auto"
    """The judge's instructions: auto (the verdict definitions, with worked examples per
    kind of check added where the judge provider's prompt cache makes them pay), compact
    (the definitions only, for every answer), guided (every worked example, for every
    answer)."""
    inspect_batch: bool = False
    """inspect backend: use the provider's batch API (Anthropic, Google...)."""
    cache_prompt: Annotated[bool | Literal["auto"], Field(json_schema_extra=_cli(None))] = "auto"
    """inspect backend: the provider's prompt caching (``auto``, true or false)."""
    max_unscored_rate: Annotated[float, Field(ge=0, le=1)] = 0.02
    """Fail the run if more checks than this share cannot be graded."""
    long_answer_tokens: Annotated[int, Field(ge=1)] = 32_000
    """Warn about an answer estimated longer than this many tokens: it is sent whole with
    each of its checks, and may not fit the judge's context. The dry run counts them."""
    request_args: Annotated[dict[str, Any], Field(json_schema_extra=_cli(None))] = {}
    """Extra fields of every judge request (``-J key=value``, e.g. ``seed=1``): added to the
    request body by the fast clients, passed as ``extra_body`` through Inspect."""
    probe: bool = True
    """Send one tiny request to each judge endpoint before any work, so a wrong URL, model,
    key or parameter ends the command in seconds (exit 2) with nothing written."""

    def verdict_identity(self) -> dict[str, object]:
        """The settings that can change a verdict (the rest only change how requests
        travel): what makes two runs the same run."""
        return {name: getattr(self, name) for name in VERDICT_FIELDS}


VERDICT_FIELDS = (
    "judge",
    "temperature",
    "max_tokens",
    "structured_output",
    "judge_image",
    "prompt_layout",
    "request_args",
)
"""``JudgeSettings`` fields that can change what a judge answers."""


class BatchSettings(BaseModel):
    """How judge requests are written, submitted and collected as provider batch files."""

    model_config = _SETTINGS

    directory: Annotated[Path | None, Field(json_schema_extra=_cli("--batch-dir"))] = None
    """Batch files folder [default: <store>.batches/]. Request files stay until their batch
    is ingested, so a restart can read them."""
    max_requests: Annotated[int, Field(ge=1, json_schema_extra=_cli("--batch-max-requests"))] = (
        OPENAI_BATCH_MAX_REQUESTS
    )
    """Requests per batch file."""
    max_mb: Annotated[float, Field(ge=0.01, json_schema_extra=_cli("--batch-max-mb"))] = (
        OPENAI_BATCH_MAX_BYTES / 1e6
    )
    """Megabytes per batch file."""
    poll_interval_s: Annotated[float, Field(gt=0, json_schema_extra=_cli("--batch-poll"))] = 30.0
    """Seconds between batch status polls."""
    max_wait_s: Annotated[float | None, Field(gt=0, json_schema_extra=_cli("--batch-max-wait"))] = (
        None
    )
    """Stop waiting after this many seconds (rerun to collect)."""
    max_active: Annotated[int | None, Field(ge=1, json_schema_extra=_cli("--batch-max-active"))] = (
        None
    )
    """Batches in flight at once."""
    completion_window: Annotated[str, Field(json_schema_extra=_cli(None))] = "24h"
    """The ``completion_window`` sent when a batch is created."""

    @property
    def max_bytes(self) -> int:
        """Bytes per batch file (at least 4 KiB)."""
        return max(4096, int(self.max_mb * 1e6))


class RaySettings(BaseModel):
    """How judge requests are spread over a Ray cluster."""

    model_config = _SETTINGS

    address: Annotated[str | None, Field(json_schema_extra=_cli("--ray-address"))] = None
    """Ray cluster address [default: local or RAY_ADDRESS]."""
    engine: Annotated[Literal["http", "vllm"], Field(json_schema_extra=_cli("--ray-engine"))] = (
        "http"
    )
    """http: actors call endpoints; vllm: vLLM engines via ray.data.llm (GPUs)."""
    endpoints: Annotated[tuple[str, ...], Field(json_schema_extra=_cli("--ray-endpoint"))] = ()
    """OpenAI-compatible base URL of a judge replica (repeatable)."""
    workers: Annotated[int, Field(ge=1, le=4096, json_schema_extra=_cli("--ray-workers"))] = 2
    """Ray actors (http) or vLLM engine replicas (vllm)."""
    worker_concurrency: Annotated[int, Field(ge=1, le=4096, json_schema_extra=_cli(None))] = 64
    """Requests in flight per actor (http engine; the command line sets it from
    --concurrency)."""
    responses_per_batch: Annotated[int, Field(ge=1, json_schema_extra=_cli(None))] = 16
    """Responses per Ray Data batch: all checks of a response travel together, so the
    replica that judges them sees the shared prefix back to back and its cache hits."""
    responses_per_wave: Annotated[int, Field(ge=1, json_schema_extra=_cli(None))] = 20_000
    """Responses handed to Ray per dataset (bounds the driver's memory on huge runs)."""
    vllm_model: Annotated[str | None, Field(json_schema_extra=_cli("--ray-vllm-model"))] = None
    """vLLM model source [default: the judge's model]."""
    vllm_tensor_parallel: Annotated[int, Field(ge=1, json_schema_extra=_cli("--ray-vllm-tp"))] = 1
    """GPUs per engine."""
    vllm_batch_size: Annotated[int, Field(ge=1, json_schema_extra=_cli(None))] = 64
    """Rows per batch sent to a vLLM engine."""
