"""``gamut agreement``, ``gamut stability`` and ``gamut audit-judge``: know your judge.

Each command parses its options, calls one library function of ``gamut_eval.quality`` and
shows the report: tables on the terminal, the full report as JSON with ``--json`` (on
standard output) or ``--out FILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gamut_eval.cli._common import console, dump_json, err_console, write_output
from gamut_eval.cli._judge import judge_options, judge_settings, sample_dataset_option
from gamut_eval.cli._main import EXIT_FAILURE, GroupedCommand
from gamut_eval.cli._terminal import PassProgress, warn_flagged
from gamut_eval.data import resolve_dataset_path, sample_dir
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from gamut_eval.dataset import Dataset
    from gamut_eval.judge import PassEvent

_file = click.Path(dir_okay=False, path_type=Path)
_dir = click.Path(file_okay=False, path_type=Path)
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


def _emit(report: BaseModel, view: Any, as_json: bool, out: Path | None) -> None:
    """Tables (or JSON with ``--json``) on standard output; JSON to ``--out`` if given."""
    text = dump_json(report.model_dump(mode="json", by_alias=True))
    if out is not None:
        write_output(text, out)
    if as_json:
        click.echo(text)
    else:
        console.print(view)


@click.command(cls=GroupedCommand)
@click.option("--verdicts", type=_file, required=True, help="The judge's verdict rows (JSONL).")
@click.option(
    "--gold",
    type=_file,
    help="Reference verdict rows (JSONL), such as human labels. Default: the bundled "
    "sample's reference labels (written with the sample, not by independent raters).",
)
@sample_dataset_option
@click.option("--judge", "judge", help="Use only the verdict rows of this judge.")
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
    if len(reports) == 1:
        _emit(reports[0], agreement_view(reports[0]), as_json, out)
        return
    text = dump_json([r.model_dump(mode="json", by_alias=True) for r in reports])
    if out is not None:
        write_output(text, out)
    if as_json:
        click.echo(text)
        return
    for report in reports:
        console.print(agreement_view(report))
        console.print()


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
    _emit(report, stability_view(report), as_json, out)
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
    _emit(report, audit_view(report), as_json, out)
    if not report.passed:
        failed = [p.name for p in report.probes if not p.passed]
        err_console.print(f"audit failed: {', '.join(failed) or 'the clean run'}")
        click.get_current_context().exit(EXIT_FAILURE)


COMMANDS = [agreement, stability, audit_judge_command]
