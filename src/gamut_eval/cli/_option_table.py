"""The options of the settings models, as plain literals. GENERATED: do not edit.

Derived from JudgeSettings, BatchSettings, RaySettings, GenerationSettings
(``gamut_eval.judge._settings``, ``gamut_eval.generate._settings``)
by ``gamut_eval.cli._option_derive.derive_table``, so
``gamut <command> --help`` builds no pydantic model; a test checks it matches the models.
Regenerate after changing a model: ``python -m gamut_eval.cli._option_derive --write``
"""

from __future__ import annotations

from typing import Any

OPTION_TABLE: dict[str, tuple[dict[str, Any], ...]] = {
    "JudgeSettings": (
        {
            "name": "backend",
            "flag": "--backend",
            "kind": "choice",
            "default": "auto",
            "help": (
                "fast: aiohttp client for OpenAI-compatible APIs; inspect: any Inspect provider; "
                "batch: provider batch APIs (files + batches); ray: Ray Data over many endpoints "
                "or vLLM engines; auto: fast where the provider speaks the OpenAI API, else "
                "inspect."
            ),
            "bounds": {},
            "choices": ("auto", "fast", "inspect", "batch", "ray"),
        },
        {
            "name": "base_url",
            "flag": "--base-url",
            "kind": "str",
            "default": None,
            "help": "Override the judge endpoint's base URL (fast and batch backends).",
            "bounds": {},
            "choices": (),
        },
        {
            "name": "concurrency",
            "flag": "--concurrency",
            "kind": "int",
            "default": 64,
            "help": "Judge requests in flight.",
            "bounds": {"min": 1, "max": 4096},
            "choices": (),
        },
        {
            "name": "rpm",
            "flag": "--rpm",
            "kind": "int",
            "default": None,
            "help": "Requests-per-minute limit (fast backend).",
            "bounds": {"min": 1},
            "choices": (),
        },
        {
            "name": "tpm",
            "flag": "--tpm",
            "kind": "int",
            "default": None,
            "help": "Tokens-per-minute limit (fast backend).",
            "bounds": {"min": 1},
            "choices": (),
        },
        {
            "name": "timeout_s",
            "flag": "--timeout",
            "kind": "float",
            "default": 120.0,
            "help": "Seconds per request.",
            "bounds": {"min": 0, "min_open": True},
            "choices": (),
        },
        {
            "name": "max_retries",
            "flag": "--max-retries",
            "kind": "int",
            "default": 6,
            "help": "Transport retries (429, 5xx, timeouts).",
            "bounds": {"min": 0, "max": 20},
            "choices": (),
        },
        {
            "name": "max_reasks",
            "flag": "--max-reasks",
            "kind": "int",
            "default": 2,
            "help": "Re-asks after a malformed verdict before a check is unscored.",
            "bounds": {"min": 0, "max": 10},
            "choices": (),
        },
        {
            "name": "temperature",
            "flag": "--judge-temperature",
            "kind": "float",
            "default": 0.0,
            "help": "Sampling temperature of the judge.",
            "bounds": {"min": 0},
            "choices": (),
        },
        {
            "name": "max_tokens",
            "flag": "--judge-max-tokens",
            "kind": "int",
            "default": 400,
            "help": "Upper bound on the judge's reply length, in tokens.",
            "bounds": {"min": 16},
            "choices": (),
        },
        {
            "name": "reasoning_effort",
            "flag": "--judge-reasoning-effort",
            "kind": "choice",
            "default": None,
            "help": (
                "Reasoning effort of a reasoning-model judge (o series, gpt-5); others ignore it."
            ),
            "bounds": {},
            "choices": ("minimal", "low", "medium", "high"),
        },
        {
            "name": "structured_output",
            "flag": "--structured-output",
            "kind": "bool",
            "default": True,
            "help": (
                "Request the verdict JSON schema via response_format (degraded to what the "
                "endpoint takes: json_schema, then json_object with the schema, then none)."
            ),
            "bounds": {},
            "choices": (),
        },
        {
            "name": "judge_image",
            "flag": "--judge-image",
            "kind": "bool",
            "default": False,
            "help": (
                "Show the judge the image (multimodal setting; checks are self-contained, so off "
                "by default)."
            ),
            "bounds": {},
            "choices": (),
        },
        {
            "name": "inspect_batch",
            "flag": "--inspect-batch",
            "kind": "bool",
            "default": False,
            "help": "inspect backend: use the provider's batch API (Anthropic, Google...).",
            "bounds": {},
            "choices": (),
        },
        {
            "name": "max_unscored_rate",
            "flag": "--max-unscored-rate",
            "kind": "float",
            "default": 0.02,
            "help": "Fail the run if more checks than this share cannot be graded.",
            "bounds": {"min": 0, "max": 1},
            "choices": (),
        },
        {
            "name": "probe",
            "flag": "--probe",
            "kind": "bool",
            "default": True,
            "help": (
                "Send one tiny request to each judge endpoint before any work, so a wrong URL, "
                "model, key or parameter ends the command in seconds (exit 2) with nothing "
                "written."
            ),
            "bounds": {},
            "choices": (),
        },
    ),
    "BatchSettings": (
        {
            "name": "directory",
            "flag": "--batch-dir",
            "kind": "path",
            "default": None,
            "help": (
                "Batch files folder [default: <store>.batches/]. Request files stay until their "
                "batch is ingested, so a restart can read them."
            ),
            "bounds": {},
            "choices": (),
        },
        {
            "name": "max_requests",
            "flag": "--batch-max-requests",
            "kind": "int",
            "default": 50000,
            "help": "Requests per batch file.",
            "bounds": {"min": 1},
            "choices": (),
        },
        {
            "name": "max_mb",
            "flag": "--batch-max-mb",
            "kind": "float",
            "default": 200.0,
            "help": "Megabytes per batch file.",
            "bounds": {"min": 0.01},
            "choices": (),
        },
        {
            "name": "poll_interval_s",
            "flag": "--batch-poll",
            "kind": "float",
            "default": 30.0,
            "help": "Seconds between batch status polls.",
            "bounds": {"min": 0, "min_open": True},
            "choices": (),
        },
        {
            "name": "max_wait_s",
            "flag": "--batch-max-wait",
            "kind": "float",
            "default": None,
            "help": "Stop waiting after this many seconds (rerun to collect).",
            "bounds": {"min": 0, "min_open": True},
            "choices": (),
        },
        {
            "name": "max_active",
            "flag": "--batch-max-active",
            "kind": "int",
            "default": None,
            "help": "Batches in flight at once.",
            "bounds": {"min": 1},
            "choices": (),
        },
    ),
    "RaySettings": (
        {
            "name": "address",
            "flag": "--ray-address",
            "kind": "str",
            "default": None,
            "help": "Ray cluster address [default: local or RAY_ADDRESS].",
            "bounds": {},
            "choices": (),
        },
        {
            "name": "engine",
            "flag": "--ray-engine",
            "kind": "choice",
            "default": "http",
            "help": "http: actors call endpoints; vllm: vLLM engines via ray.data.llm (GPUs).",
            "bounds": {},
            "choices": ("http", "vllm"),
        },
        {
            "name": "endpoints",
            "flag": "--ray-endpoint",
            "kind": "multiple",
            "default": (),
            "help": "OpenAI-compatible base URL of a judge replica (repeatable).",
            "bounds": {},
            "choices": (),
        },
        {
            "name": "workers",
            "flag": "--ray-workers",
            "kind": "int",
            "default": 2,
            "help": "Ray actors (http) or vLLM engine replicas (vllm).",
            "bounds": {"min": 1, "max": 4096},
            "choices": (),
        },
        {
            "name": "vllm_model",
            "flag": "--ray-vllm-model",
            "kind": "str",
            "default": None,
            "help": "vLLM model source [default: the judge's model].",
            "bounds": {},
            "choices": (),
        },
        {
            "name": "vllm_tensor_parallel",
            "flag": "--ray-vllm-tp",
            "kind": "int",
            "default": 1,
            "help": "GPUs per engine.",
            "bounds": {"min": 1},
            "choices": (),
        },
    ),
    "GenerationSettings": (
        {
            "name": "temperature",
            "flag": "--temperature",
            "kind": "float",
            "default": None,
            "help": "Sampling temperature of the answering models (default: the provider's).",
            "bounds": {"min": 0},
            "choices": (),
        },
        {
            "name": "max_tokens",
            "flag": "--max-tokens",
            "kind": "int",
            "default": None,
            "help": "Most tokens an answer may have (default: the provider's).",
            "bounds": {"min": 1},
            "choices": (),
        },
        {
            "name": "top_p",
            "flag": "--top-p",
            "kind": "float",
            "default": None,
            "help": (
                "Nucleus sampling: the probability mass of tokens considered (default: the "
                "provider's)."
            ),
            "bounds": {"min": 0, "max": 1},
            "choices": (),
        },
        {
            "name": "reasoning_effort",
            "flag": "--reasoning-effort",
            "kind": "choice",
            "default": None,
            "help": (
                "Reasoning effort of reasoning models (Inspect's GenerateConfig.reasoning_effort)."
            ),
            "bounds": {},
            "choices": ("minimal", "low", "medium", "high"),
        },
        {
            "name": "system_message",
            "flag": "--system-message",
            "kind": "str",
            "default": None,
            "help": "A system message put before every question, verbatim (no template).",
            "bounds": {},
            "choices": (),
        },
        {
            "name": "epochs",
            "flag": "--epochs",
            "kind": "int",
            "default": 1,
            "help": (
                "Answers per question, model and setting; above 1 only `gamut generate` (one row "
                "per epoch, `epoch` in its metadata)."
            ),
            "bounds": {"min": 1},
            "choices": (),
        },
    ),
}
