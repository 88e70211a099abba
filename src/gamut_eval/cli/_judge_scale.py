"""``gamut judge`` past one machine: ``--backend batch|ray`` and ``--dry-run``.

Kept out of ``_judge.py`` so the online command stays as it was: ``scale_options`` adds
this module's options to ``gamut judge`` (after its own, in the help) and widens its
``--backend`` choice; ``take_scale_options`` removes them from the command's keyword
arguments before the judge settings are built; ``run_scaled`` calls the library.
``gamut run`` keeps the online backends: it scores as soon as verdicts exist, which a
batch pass (hours) or a cluster job does not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.table import Table

from gamut_eval.cli._common import console, err_console
from gamut_eval.cli._progress import judge_progress
from gamut_eval.dataset import load_dataset
from gamut_eval.errors import InputError
from gamut_eval.judge._dryrun import DryRunReport, estimate_pass, load_prices
from gamut_eval.judge._engine import plan_responses
from gamut_eval.judge._run import JudgeReport, count_checks
from gamut_eval.judge._scale_run import (
    ingest_batch_results,
    judge_responses_batch,
    judge_responses_ray,
    write_batch_requests,
)
from gamut_eval.judge._scale_settings import (
    OPENAI_BATCH_MAX_BYTES,
    OPENAI_BATCH_MAX_REQUESTS,
    BatchSettings,
    RaySettings,
)
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import VerdictStore

__all__ = ["SCALE_BACKENDS", "ScaleRequest", "run_scaled", "scale_options", "take_scale_options"]

SCALE_BACKENDS = ("batch", "ray")
F = TypeVar("F", bound=Callable[..., Any])
_dir = click.Path(file_okay=False, path_type=Path)
_in_file = click.Path(dir_okay=False, exists=True, path_type=Path)

_OPTIONS = [
    click.option("--dry-run", is_flag=True, help="Count requests, tokens and cost; send nothing."),
    click.option("--prices", type=_in_file, help="Price table YAML for --dry-run (per 1M tokens)."),
    click.option(
        "--output-tokens",
        type=click.IntRange(1),
        default=60,
        show_default=True,
        help="Expected completion tokens per request (--dry-run).",
    ),
    click.option("--batch-dir", type=_dir, help="Batch files folder [default: <store>.batches/]."),
    click.option(
        "--batch-write-only",
        is_flag=True,
        help="Only write the Batch API JSONL request files (for `vllm run-batch`).",
    ),
    click.option(
        "--batch-ingest",
        type=_in_file,
        multiple=True,
        help="Ingest a batch results file (repeatable) instead of submitting.",
    ),
    click.option(
        "--batch-max-requests",
        type=click.IntRange(1),
        default=OPENAI_BATCH_MAX_REQUESTS,
        show_default=True,
        help="Requests per batch file.",
    ),
    click.option(
        "--batch-max-mb",
        type=click.FloatRange(0.01),
        default=OPENAI_BATCH_MAX_BYTES / 1e6,
        show_default=True,
        help="Megabytes per batch file.",
    ),
    click.option(
        "--batch-poll",
        type=click.FloatRange(0, min_open=True),
        default=30.0,
        show_default=True,
        help="Seconds between batch status polls.",
    ),
    click.option(
        "--batch-max-wait",
        type=click.FloatRange(0, min_open=True),
        help="Stop waiting after this many seconds (rerun to collect).",
    ),
    click.option("--batch-max-active", type=click.IntRange(1), help="Batches in flight at once."),
    click.option("--ray-address", help="Ray cluster address [default: local or RAY_ADDRESS]."),
    click.option(
        "--ray-engine",
        type=click.Choice(["http", "vllm"]),
        default="http",
        show_default=True,
        help="http: actors call endpoints; vllm: vLLM engines via ray.data.llm (GPUs).",
    ),
    click.option(
        "--ray-endpoint",
        multiple=True,
        help="OpenAI-compatible base URL of a judge replica (repeatable).",
    ),
    click.option(
        "--ray-workers",
        type=click.IntRange(1),
        default=2,
        show_default=True,
        help="Ray actors (http) or vLLM engine replicas (vllm).",
    ),
    click.option("--ray-vllm-model", help="vLLM model source [default: the judge's model]."),
    click.option(
        "--ray-vllm-tp",
        type=click.IntRange(1),
        default=1,
        show_default=True,
        help="GPUs per engine.",
    ),
]
_NAMES = (
    "dry_run",
    "prices",
    "output_tokens",
    "batch_dir",
    "batch_write_only",
    "batch_ingest",
    "batch_max_requests",
    "batch_max_mb",
    "batch_poll",
    "batch_max_wait",
    "batch_max_active",
    "ray_address",
    "ray_engine",
    "ray_endpoint",
    "ray_workers",
    "ray_vllm_model",
    "ray_vllm_tp",
)


def scale_options(command: F) -> F:
    """Add the scale-out options after ``judge_options``'s, and widen ``--backend``.

    Apply it above ``@judge_options`` (so ``--backend`` already exists)."""
    params: list[click.Parameter] = command.__click_params__  # type: ignore[attr-defined]
    before = len(params)
    for option in reversed(_OPTIONS):
        command = option(command)
    added = params[before:]
    del params[before:]
    params[:0] = added  # click lists params in reverse: these now come last in --help
    for param in params:
        if param.name == "backend" and isinstance(param.type, click.Choice):
            param.type = click.Choice([*param.type.choices, *SCALE_BACKENDS])
            if isinstance(param, click.Option):
                param.help = (
                    f"{param.help} batch: provider batch APIs (files + batches); "
                    "ray: Ray Data over many endpoints or vLLM engines."
                )
    return command


@dataclass(frozen=True)
class ScaleRequest:
    """The scale-out part of one ``gamut judge`` invocation."""

    backend: str | None
    dry_run: bool
    prices: Path | None
    output_tokens: int
    write_only: bool
    ingest: tuple[Path, ...]
    batch: BatchSettings
    ray: dict[str, Any]
    """RaySettings fields; ``worker_concurrency`` is filled from ``--concurrency``."""

    @property
    def active(self) -> bool:
        return self.dry_run or self.backend is not None


def take_scale_options(options: dict[str, Any]) -> ScaleRequest:
    """Remove this module's options from ``options``; a scale backend becomes ``auto``
    there, so the remaining options build ordinary ``JudgeSettings``."""
    values = {name: options.pop(name) for name in _NAMES}
    backend = options.get("backend")
    scale_backend = backend if backend in SCALE_BACKENDS else None
    if scale_backend is not None:
        options["backend"] = "auto"
    if (values["batch_write_only"] or values["batch_ingest"]) and scale_backend != "batch":
        raise InputError("--batch-write-only and --batch-ingest need --backend batch")
    if values["batch_write_only"] and values["batch_ingest"]:
        raise InputError("--batch-write-only and --batch-ingest are separate steps: give one")
    batch = BatchSettings(
        directory=values["batch_dir"],
        max_requests=values["batch_max_requests"],
        max_bytes=max(4096, int(values["batch_max_mb"] * 1e6)),
        poll_interval_s=values["batch_poll"],
        max_wait_s=values["batch_max_wait"],
        max_active=values["batch_max_active"],
    )
    ray = {
        "address": values["ray_address"],
        "engine": values["ray_engine"],
        "endpoints": tuple(values["ray_endpoint"]),
        "workers": values["ray_workers"],
        "vllm_model": values["ray_vllm_model"],
        "vllm_tensor_parallel": values["ray_vllm_tp"],
    }
    return ScaleRequest(
        scale_backend,
        values["dry_run"],
        values["prices"],
        values["output_tokens"],
        values["batch_write_only"],
        tuple(values["batch_ingest"]),
        batch,
        ray,
    )


def run_scaled(
    request: ScaleRequest,
    dataset_path: Path,
    responses: Path,
    settings: JudgeSettings,
    store: Path,
    out: Path | None,
    wait_s: float,
) -> None:
    """Run the dry run, or the batch / ray pass, that ``request`` asks for."""
    dataset = load_dataset(dataset_path)
    if request.dry_run:
        _dry_run(request, dataset, responses, settings, store)
    elif request.write_only:
        written = write_batch_requests(
            dataset, responses, settings, request.batch, store, wait_for_store_s=wait_s
        )
        for file in written.files:
            err_console.print(f"wrote {file.path} ({file.requests} requests, {file.bytes:,} bytes)")
        err_console.print(
            f"{written.requests} requests ({written.reasks} re-asks) in {len(written.files)} "
            f"file(s), {written.cached} checks already in the store. Run each file through "
            "`vllm run-batch -i FILE -o RESULTS --model MODEL` (or upload it), then: "
            "gamut judge ... --backend batch --batch-ingest RESULTS"
        )
    elif request.ingest:
        report, counts = ingest_batch_results(
            dataset, responses, settings, store, request.ingest, out, wait_for_store_s=wait_s
        )
        _summary(report, store)
        err_console.print(
            f"ingested {counts.lines} result lines ({counts.stored} verdict rows, "
            f"{counts.skipped} already in the store, {counts.unknown} not of this run)"
        )
        if counts.reasks:
            err_console.print(
                f"[yellow]{counts.reasks} checks await a re-ask:[/yellow] run --batch-write-only "
                "again, then ingest its results"
            )
    else:
        _judge(request, dataset, responses, settings, store, out, wait_s)


def _judge(
    request: ScaleRequest,
    dataset: Any,
    responses: Path,
    settings: JudgeSettings,
    store: Path,
    out: Path | None,
    wait_s: float,
) -> None:
    with judge_progress(f"judging with {settings.judge} ({request.backend})") as progress:
        if request.backend == "batch":
            report = judge_responses_batch(
                dataset,
                responses,
                settings,
                request.batch,
                store,
                out,
                wait_for_store_s=wait_s,
                on_progress=progress.update,
                on_start=progress.start,
                on_event=lambda message: err_console.print(message),
            )
        else:
            ray = RaySettings(**request.ray, worker_concurrency=settings.concurrency)
            report = judge_responses_ray(
                dataset,
                responses,
                settings,
                ray,
                store,
                out,
                wait_for_store_s=wait_s,
                on_progress=progress.update,
                on_start=progress.start,
            )
        progress.update(report.stats, force=True)
    _summary(report, store)


def _summary(report: JudgeReport, store: Path) -> None:
    stats = report.stats
    err_console.print(
        f"{report.rows} verdict rows ({stats.cached} from the store, {stats.judged} judged now in "
        f"{stats.calls} calls; {report.unscored} unscored); store: {store}"
    )


def _dry_run(
    request: ScaleRequest, dataset: Any, responses: Path, settings: JudgeSettings, store: Path
) -> None:
    count_checks(dataset, responses)  # validate first: a bad file is an error, not a count
    prices = load_prices(request.prices) if request.prices else None
    plans = plan_responses(dataset, responses, settings)
    if store.is_file():
        with VerdictStore(store, writer=False) as verdicts:
            report = estimate_pass(
                plans,
                settings,
                store=verdicts,
                prices=prices,
                output_tokens_per_request=request.output_tokens,
            )
    else:
        report = estimate_pass(
            plans, settings, prices=prices, output_tokens_per_request=request.output_tokens
        )
    console.print(dry_run_table(report))
    if prices is not None and report.price_entry is None:
        err_console.print(f"[yellow]no price for {settings.judge} in {request.prices}[/yellow]")


def _money(amount: float) -> str:
    return f"{amount:,.2f}" if amount >= 1 else f"{amount:.4f}"


def dry_run_table(report: DryRunReport) -> Table:
    """The dry-run report as a two-column table."""
    table = Table(title=f"Dry run: {report.judge} (nothing sent)", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    money = report.currency or ""
    rows = [
        ("checks in the responses file", f"{report.total_checks:,}"),
        ("already in the store / repeated", f"{report.cached:,}"),
        ("requests to send", f"{report.requests:,}"),
        ("prompt tokens (estimated)", f"{report.prompt_tokens:,}"),
        ("output tokens (estimated)", f"{report.output_tokens:,}"),
        ("output tokens (at most)", f"{report.max_output_tokens:,}"),
        ("shared-prefix fraction", f"{100 * report.shared_prefix_fraction:.1f}%"),
        ("prompt tokens a prefix cache can serve", f"{report.cacheable_tokens:,}"),
    ]
    for label, cost in (
        ("cost: standard", report.cost_standard),
        ("cost: with prompt caching", report.cost_cached),
        ("cost: batch API", report.cost_batch),
    ):
        rows.append((label, "n/a" if cost is None else f"{_money(cost)} {money}".strip()))
    for label, value in rows:
        table.add_row(label, value)
    return table
