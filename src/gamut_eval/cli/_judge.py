"""``gamut judge``: grade every (answer, check) with an LLM judge, on any backend; and
``gamut agreement``, ``gamut stability`` and ``gamut audit-judge``: know your judge.

The options are derived from the settings models (``JudgeSettings``, ``BatchSettings``,
``RaySettings``): their defaults and help text are written once, there. Each quality
command calls one library function of ``gamut_eval.quality`` and shows the report: tables
on the terminal, the full report as JSON with ``--json`` (on standard output) or
``--out FILE``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gamut_eval.cli._common import (
    console,
    dump_json,
    err_console,
    image_root_option,
    option_stack,
    write_output,
)
from gamut_eval.cli._main import EXIT_FAILURE, GroupedCommand
from gamut_eval.cli._options import config_option, model_options, model_values, settings_from
from gamut_eval.cli._terminal import PassProgress, warn_flagged
from gamut_eval.data import SAMPLE_ALIAS, resolve_dataset_path, sample_dir
from gamut_eval.errors import InputError
from gamut_eval.judge import BatchSettings, JudgeSettings, RaySettings

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.table import Table

    from gamut_eval.dataset import Dataset
    from gamut_eval.judge import BackendOptions, DryRunReport, JudgeReport, PassEvent
    from gamut_eval.prices import ModelPrice

_file = click.Path(dir_okay=False, path_type=Path)
_dir = click.Path(file_okay=False, path_type=Path)
_in_file = click.Path(dir_okay=False, exists=True, path_type=Path)
F = TypeVar("F", bound=Callable[..., Any])


def judge_options(*, choices: Iterable[str] | None = None) -> Callable[[F], F]:
    """The judge settings as options (``choices`` narrows ``--backend``), ``--config`` and
    ``--wait-for-store``: shared by ``gamut judge``, ``gamut run`` and the quality commands."""
    narrowed = {"backend": list(choices)} if choices is not None else None
    return option_stack(
        config_option,
        model_options(JudgeSettings, choices=narrowed),
        click.option(
            "-J",
            "--judge-arg",
            "judge_request_args",
            multiple=True,
            metavar="KEY=VALUE",
            help="Extra field of every judge request (repeatable, e.g. -J seed=1); the value "
            "is read as YAML, as -M reads it.",
        ),
        click.option(
            "--wait-for-store",
            type=click.FloatRange(min=0),
            default=0.0,
            help="Seconds to wait if another process is using the store (or, gamut run, the "
            "run folder) before giving up.",
        ),
    )


def judge_settings(judge: str, options: dict[str, Any]) -> JudgeSettings:
    """The ``JudgeSettings`` of ``judge`` from a command's options (which it consumes)."""
    from gamut_eval.generate import parse_model_args

    try:
        extra = parse_model_args(options.pop("judge_request_args"), flag="-J")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'-J' / '--judge-arg'") from None
    values = {"judge": judge, **model_values(JudgeSettings, options), "request_args": extra}
    return settings_from(JudgeSettings, values)


_scale_options = option_stack(
    click.option("--dry-run", is_flag=True, help="Count requests, tokens, cost; send nothing."),
    click.option("--prices", type=_in_file, help="Price table YAML for --dry-run (per 1M)."),
    click.option(
        "--output-tokens",
        type=click.IntRange(1),
        default=60,
        help="Expected completion tokens per request (--dry-run).",
    ),
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
    model_options(BatchSettings),
    model_options(RaySettings),
)
"""The scale-out options of ``gamut judge``: dry run, batch files, Ray."""


def _backend_options(settings: JudgeSettings, options: dict[str, Any]) -> BackendOptions:
    from gamut_eval.judge import BackendOptions

    write_only, ingest = options.pop("batch_write_only"), tuple(options.pop("batch_ingest"))
    if (write_only or ingest) and settings.backend != "batch":
        raise InputError("--batch-write-only and --batch-ingest need --backend batch")
    ray = {**model_values(RaySettings, options), "worker_concurrency": settings.concurrency}
    return BackendOptions(
        batch=settings_from(BatchSettings, model_values(BatchSettings, options)),
        ray=settings_from(RaySettings, ray),
        batch_write_only=write_only,
        batch_ingest=ingest,
        prices=options.pop("prices"),
        output_tokens=options.pop("output_tokens"),
    )


sample_dataset_option = click.option(
    "--dataset",
    default=SAMPLE_ALIAS,
    help="Dataset (JSONL, JSON or Parquet), a meta-rubric file (YAML/JSON) or a folder of "
    "them, or `sample` for the bundled sample benchmark.",
)
"""``--dataset``, the bundled sample by default (also the quality commands')."""


@click.command(cls=GroupedCommand)
@sample_dataset_option
@image_root_option
@click.option(
    "--responses",
    type=_file,
    required=True,
    help="Answers (JSONL, JSON or Parquet): question_id, model, setting, response. Every "
    "model must answer every question in each setting it answers.",
)
@click.option(
    "--judge",
    required=True,
    help="Judge model, e.g. openai/gpt-4.1-mini or openai-api/vllm/qwen3.",
)
@click.option(
    "--store",
    type=_file,
    help="Verdict store (SQLite). Default: verdicts.sqlite beside --out, else here.",
)
@click.option(
    "--out",
    type=_file,
    help="Verdict rows: .jsonl, .json or .parquet (default: JSONL on standard output).",
)
@judge_options()
@_scale_options
def judge(
    dataset: str,
    responses: Path,
    judge: str,
    store: Path | None,
    out: Path | None,
    dry_run: bool,
    wait_for_store: float,
    image_root: Path | None,
    **options: Any,
) -> None:
    """Grade every check of every response independently, with four verdicts.

    Runs resume: verdicts already in the store are not requested again, and editing one
    check re-sends only that check. Checks the judge cannot grade are recorded as unscored
    with a reason, never as a model failure; past --max-unscored-rate the run fails (exit 1).
    """
    from gamut_eval.dataset import load_dataset
    from gamut_eval.judge import judge_responses, make_backend

    settings = judge_settings(judge, options)
    backend_options = _backend_options(settings, options)
    # The judge is resolved once, here; the probe and the pass read the backend's record.
    backend = make_backend(settings, backend_options, name="dry-run" if dry_run else None)
    store = store or (out.parent if out else Path.cwd()) / "verdicts.sqlite"
    name = backend.name
    label = "judging with {label}" + (f" ({name})" if name in ("batch", "ray") else "")
    with PassProgress(label) as progress:
        report = judge_responses(
            load_dataset(resolve_dataset_path(dataset), image_root=image_root),
            responses,
            settings,
            store,
            out,
            backend=backend,
            wait_for_store_s=wait_for_store,
            on_event=progress,
            complete=True,
        )
    _report(backend, report, store)


def _report(backend: Any, report: JudgeReport, store: Path) -> None:
    """What the pass did, in the terms of its backend."""
    from gamut_eval.judge import BatchBackend, DryRunBackend

    if isinstance(backend, DryRunBackend) and backend.report is not None:
        console.print(dry_run_table(backend.report))
        if backend.prices is not None and backend.report.price_entry is None:
            err_console.print(f"[yellow]no price for {backend.report.judge}[/yellow]")
        return
    if isinstance(backend, BatchBackend) and backend.written is not None:
        written = backend.written
        for file in written.files:
            err_console.print(f"wrote {file.path} ({file.requests} requests, {file.bytes:,} bytes)")
        err_console.print(
            f"{written.requests} requests ({written.reasks} re-asks) in {len(written.files)} "
            f"file(s), {written.cached} checks already in the store. Run each file through "
            "`vllm run-batch -i FILE -o RESULTS --model MODEL` (or upload it), then: "
            "gamut judge ... --backend batch --batch-ingest RESULTS"
        )
        return
    stats = report.stats
    warn_flagged(stats)
    err_console.print(
        f"{report.rows} verdict rows ({stats.cached} from the store, {stats.judged} judged now in "
        f"{stats.calls} calls; {report.unscored} unscored); store: {store}"
    )
    if isinstance(backend, BatchBackend) and backend.ingested is not None:
        counts = backend.ingested
        err_console.print(
            f"ingested {counts.lines} result lines ({counts.stored} verdict rows, "
            f"{counts.skipped} already in the store, {counts.unknown} not of this run)"
        )
        if counts.reasks:
            err_console.print(
                f"[yellow]{counts.reasks} checks await a re-ask:[/yellow] run --batch-write-only "
                "again, then ingest its results"
            )


# -- know your judge: agreement, stability, audit-judge ------------------------------------

_SAMPLE_CLEAN_MODELS = ("sample/thorough", "sample/brief")
"""The sample's clean answers for the audit: its two systems that identify every entity."""

_json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the full report as JSON instead of tables."
)
_out_option = click.option(
    "-o",
    "--out",
    type=_file,
    help="Also write the full report as JSON to this file (atomically).",
)
_store_dir_option = click.option(
    "--store-dir",
    type=_dir,
    help="Keep the verdict stores (one per run) here, so an interrupted run resumes. "
    "Default: a temporary directory.",
)


class _Bars(PassProgress):
    """A progress bar per measurement run, and a warning for flagged answers after each."""

    def __call__(self, event: PassEvent) -> None:
        super().__call__(event)
        if event.kind == "done":
            warn_flagged(event.stats)


def _dataset(value: str) -> tuple[Dataset, bool]:
    """The loaded dataset, and whether it is the bundled sample."""
    from gamut_eval.dataset import load_dataset

    path = resolve_dataset_path(value)
    is_sample = path.resolve() == (sample_dir() / "dataset.jsonl").resolve()
    return load_dataset(path), is_sample


def _emit(
    reports: Sequence[BaseModel], view: Callable[[Any], Any], as_json: bool, out: Path | None
) -> None:
    """Tables (or JSON with ``--json``) on standard output; JSON to ``--out`` if given. One
    report is a JSON object; several are a list, with a blank line after each table."""
    data = [report.model_dump(mode="json", by_alias=True) for report in reports]
    text = dump_json(data[0] if len(data) == 1 else data)
    if out is not None:
        write_output(text, out)
    if as_json:
        click.echo(text)
        return
    for report in reports:
        console.print(view(report))
        if len(reports) > 1:
            console.print()


@click.command(cls=GroupedCommand)
@click.option("--verdicts", type=_file, required=True, help="The judge's verdict rows (JSONL).")
@click.option(
    "--gold",
    type=_file,
    help="Reference verdict rows (JSONL), such as human labels. Default: the bundled "
    "sample's reference labels (written with the sample, not by independent raters).",
)
@sample_dataset_option
@click.option("--judge", help="Use only the verdict rows of this judge.")
@click.option(
    "--resamples",
    type=click.IntRange(1, 100_000),
    default=1000,
    help="Bootstrap resamples (of questions) for the intervals.",
)
@click.option("--seed", type=int, default=0, help="Bootstrap seed.")
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    help="Interval coverage.",
)
@_json_option
@_out_option
def agreement(
    verdicts: Path,
    gold: Path | None,
    dataset: str,
    judge: str | None,
    resamples: int,
    seed: int,
    confidence: float,
    as_json: bool,
    out: Path | None,
) -> None:
    """How well a judge agrees with reference verdicts, and how far the score moves.

    Rows are matched on (question_id, model, setting, check_id). Reports accuracy,
    Cohen's kappa and Krippendorff's alpha (ordinal: contradicts < missing <
    partially_meets < meets) with bootstrap intervals over questions, the confusion
    matrix, the same per tier and per check kind, and each model's Gamut score from the
    reference verdicts and from the judge's. Unmatched and unscored rows are counted and
    left out; the score shift is computed on the answers with a row for every check in
    both files. A file with the rows of several judges (a run's verdicts.jsonl) gives one
    report per judge (with --json or -o, a JSON list), unless --judge picks one. The
    default reference, the bundled sample's labels, was written with the
    sample: agreement with it is not agreement with independent human raters.
    """
    from gamut_eval.quality import agreement_reports, agreement_view

    data, _ = _dataset(dataset)
    reports = agreement_reports(
        verdicts,
        gold or sample_dir() / "gold.jsonl",
        data,
        judge=judge,
        n_resamples=resamples,
        seed=seed,
        confidence=confidence,
    )
    _emit(reports, agreement_view, as_json, out)


def _responses(responses: Path | None, is_sample: bool) -> Path | None:
    if responses is None and is_sample:
        return sample_dir() / "responses.jsonl"
    return responses


@click.command(cls=GroupedCommand)
@click.option("--judge", required=True, help="Judge model, e.g. openai/gpt-4.1-mini.")
@click.option(
    "--repeats",
    type=click.IntRange(2, 1000),
    default=3,
    help="Independent runs over the same checks.",
)
@sample_dataset_option
@click.option(
    "--responses",
    type=_file,
    help="Answers to judge (default: the sample's, with --dataset sample).",
)
@_store_dir_option
@_json_option
@_out_option
@judge_options()
def stability(
    judge: str,
    repeats: int,
    dataset: str,
    responses: Path | None,
    store_dir: Path | None,
    as_json: bool,
    out: Path | None,
    wait_for_store: float,
    **options: Any,
) -> None:
    """Judge the same checks N times: flip rate, kappa between repeats, score spread.

    Every repeat is a distinct run in its own verdict store, so none is served from
    another's cache. Exits 1 when a repeat leaves more checks unscored than
    --max-unscored-rate (after showing the report).
    """
    from gamut_eval.judge import UnscoredRateExceeded
    from gamut_eval.quality import judge_stability, stability_view

    settings = judge_settings(judge, options)
    data, is_sample = _dataset(dataset)
    path = _responses(responses, is_sample)
    if path is None:
        raise InputError("--responses is required with a dataset other than the sample")
    with _Bars("judging {label}") as bars:
        report = judge_stability(data, path, settings, repeats, store_dir=store_dir, on_event=bars)
    _emit([report], stability_view, as_json, out)
    worst = max(report.unscored) / report.checks if report.checks else 0.0
    if worst > settings.max_unscored_rate:
        raise UnscoredRateExceeded(
            f"a repeat left {max(report.unscored)} of {report.checks} checks unscored, above "
            f"--max-unscored-rate {settings.max_unscored_rate:g}: the flip rates leave them out"
        )


@click.command(cls=GroupedCommand, name="audit-judge")
@click.option("--judge", required=True, help="Judge model, e.g. openai/gpt-4.1-mini.")
@sample_dataset_option
@click.option(
    "--responses",
    type=_file,
    help="Clean answers to perturb (default: the sample's, with --dataset sample). "
    "Without any, only the null probes run.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Use the answers of this model as clean answers (repeatable; default: all, or "
    "sample/thorough and sample/brief on the sample).",
)
@click.option(
    "--setting",
    type=click.Choice(["multimodal", "text_only", "both"]),
    default="multimodal",
    help="Which answers to probe.",
)
@click.option(
    "--max-flip-rate",
    type=click.FloatRange(0, 1),
    default=0.05,
    help="Fail if a perturbation changes more verdicts than this share.",
)
@click.option(
    "--max-null-pass-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    help="Fail if more null-answer checks than this share are judged (partially) met.",
)
@_store_dir_option
@_json_option
@_out_option
@judge_options()
def audit_judge_command(
    judge: str,
    dataset: str,
    responses: Path | None,
    models: tuple[str, ...],
    setting: str,
    max_flip_rate: float,
    max_null_pass_rate: float,
    store_dir: Path | None,
    as_json: bool,
    out: Path | None,
    wait_for_store: float,
    **options: Any,
) -> None:
    """Run the shipped adversarial probes against a judge; exit 1 past the thresholds.

    Null answers (empty, whitespace, ":", "Thought process:", a persuasive non-answer)
    must be judged missing; injections, fake verdict JSON, fence escapes, 2,000 words of
    filler and a reversed check order appended to or applied on clean answers must not
    change their verdicts.
    """
    from gamut_eval.quality import AuditThresholds, audit_judge, audit_view

    settings = judge_settings(judge, options)
    data, is_sample = _dataset(dataset)
    path = _responses(responses, is_sample)
    if is_sample and responses is None and not models:
        models = _SAMPLE_CLEAN_MODELS
    thresholds = AuditThresholds(
        max_flip_rate=max_flip_rate,
        max_null_pass_rate=max_null_pass_rate,
        max_unscored_rate=settings.max_unscored_rate,
    )
    with _Bars("judging {label}") as bars:
        report = audit_judge(
            data,
            settings,
            responses=path,
            models=models,
            setting=setting,  # type: ignore[arg-type]
            thresholds=thresholds,
            store_dir=store_dir,
            on_event=bars,
        )
    _emit([report], audit_view, as_json, out)
    if not report.passed:
        failed = [p.name for p in report.probes if not p.passed]
        err_console.print(f"audit failed: {', '.join(failed) or 'the clean run'}")
        click.get_current_context().exit(EXIT_FAILURE)


COMMANDS = [judge, agreement, stability, audit_judge_command]


# -- the dry-run report of gamut judge --dry-run, as a table -------------------------------


def _money(amount: float) -> str:
    return f"{amount:,.2f}" if amount >= 1 else f"{amount:.4f}"


def _variants(counts: dict[str, int]) -> str:
    return ", ".join(f"{version} {n:,}" for version, n in counts.items()) or "none"


def _prices(price: ModelPrice) -> str:
    cached = price.input if price.cached_input is None else price.cached_input
    written = price.input if price.cache_write_input is None else price.cache_write_input
    return (
        f"input {price.input:g}, cached input {cached:g}, cache writes {written:g}, "
        f"output {price.output:g}"
    )


def dry_run_table(report: DryRunReport) -> Table:
    """The dry-run report as a two-column table."""
    from rich.table import Table

    table = Table(title=f"Dry run: {report.judge} (nothing sent)", show_header=False)
    table.add_column("what", no_wrap=True)
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
        ("prompt variants (responses)", _variants(report.prompt_variants)),
        ("prompt cache", report.cache_rules or "none"),
        ("prompt tokens a prefix cache can serve", f"{report.cacheable_tokens:,}"),
        ("prompt tokens written to the cache", f"{report.cache_write_tokens:,}"),
    ]
    if report.long_answers:
        rows.insert(
            4,
            (
                f"of which {report.long_answers:,} long answer(s), each sent with every check",
                f"{report.long_answer_tokens:,}",
            ),
        )
    if report.prices is not None:
        rows.append((f"prices per 1M tokens {money}".strip(), _prices(report.prices)))
    for label, cost in (
        ("cost: standard", report.cost_standard),
        ("cost: with prompt caching", report.cost_cached),
        ("cost: batch API", report.cost_batch),
    ):
        rows.append((label, "n/a" if cost is None else f"{_money(cost)} {money}".strip()))
    for label, value in rows:
        table.add_row(label, value)
    return table
