"""``gamut generate``, ``gamut run`` and ``gamut demo``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gamut_eval._extras import extra_installed, install_command
from gamut_eval.cli._calibrate import (
    calibrate_options,
    calibrate_request,
    print_calibration,
    print_plan,
)
from gamut_eval.cli._common import (
    console,
    err_console,
    image_root_option,
    option_stack,
    print_plain,
)
from gamut_eval.cli._judge import dry_run_table, judge_options, judge_settings
from gamut_eval.cli._main import GroupedCommand
from gamut_eval.cli._options import model_options, model_values, settings_from
from gamut_eval.cli._terminal import Namer, PassProgress, fitted, print_fitted, warn_flagged
from gamut_eval.data import SAMPLE_ALIAS, resolve_dataset_path, sample_dir
from gamut_eval.generate import GenerationSettings
from gamut_eval.judge import OFFLINE_JUDGE, ONLINE_BACKENDS

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

    from gamut_eval.calibration import CalibrateWith
    from gamut_eval.judge import JudgeSettings
    from gamut_eval.run import RunResult

_file = click.Path(dir_okay=False, path_type=Path)
_dir = click.Path(file_okay=False, path_type=Path)
_setting = click.Choice(["multimodal", "text_only", "both"])
_dataset_option = option_stack(
    click.option(
        "--dataset",
        default=SAMPLE_ALIAS,
        help="Dataset (JSONL, JSON or Parquet), a meta-rubric file (YAML/JSON) or a folder of "
        "them, `sample` for the bundled sample benchmark, or "
        "hf://datasets/OWNER/NAME/PATH on the Hugging Face Hub (the 'hub' extra).",
    ),
    image_root_option,
)
"""``--dataset`` and ``--image-root``."""

_GENERATION = "generation_"
"""Starts the keyword names of the generation options (the judge has a ``temperature``
and a ``max_tokens`` too)."""
generation_options = option_stack(
    model_options(GenerationSettings, prefix=_GENERATION),
    click.option(
        "-M",
        "--model-arg",
        _GENERATION + "model_args",
        multiple=True,
        metavar="KEY=VALUE",
        help="Argument of the answering models' provider (repeatable), as Inspect's -M: the "
        "value is read as YAML (0.5 a number, true a boolean).",
    ),
)
"""The generation settings (``GenerationSettings``) as options, and ``-M``."""


def generation_settings(options: dict[str, Any]) -> GenerationSettings:
    """The ``GenerationSettings`` from a command's options (which it consumes)."""
    from gamut_eval.generate import parse_model_args

    values = model_values(GenerationSettings, options, prefix=_GENERATION)
    try:
        model_args = parse_model_args(options.pop(_GENERATION + "model_args"))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'-M' / '--model-arg'") from None
    return settings_from(GenerationSettings, {**values, "model_args": model_args})


def _dry_run(
    dataset: str,
    out: Path,
    settings: list[Any],
    responses: Path | None,
    setting: str,
    fill_missing: bool,
    prices: Path | None,
    image_root: Path | None,
    calibrate: CalibrateWith | None,
    planner: dict[str, Any],
) -> None:
    from gamut_eval.errors import InputError
    from gamut_eval.run import estimate_run

    if responses is None:
        raise InputError(
            "--dry-run needs --responses: answers that are not generated yet cannot be counted"
        )
    strong = calibrate.judge if calibrate is not None else None
    if calibrate is not None and len(settings) != 1:
        raise InputError(
            f"calibrated scores correct one judge; {len(settings)} were given",
            setting="judges",
        )
    reports = estimate_run(
        resolve_dataset_path(dataset),
        out,
        [*settings, strong] if strong is not None else settings,
        responses,
        setting=setting,
        fill_missing=fill_missing,
        prices=_prices(prices),
        image_root=image_root,
    )
    for report in reports:
        console.print(dry_run_table(report))
    if calibrate is not None:
        from gamut_eval.calibration import plan_calibration

        plan = plan_calibration(
            resolve_dataset_path(dataset),
            out,
            settings[0].judge,
            responses,
            calibrate,
            setting=setting,
            prior=planner["calibrate_prior"],
            target=planner["calibrate_width"],
        )
        print_plan(plan, reports[0], reports[1] if strong is not None else None)


def _prices(path: Path | None) -> Any:
    if path is None:
        return None
    from gamut_eval.prices import load_prices

    return load_prices(path)


@click.command(cls=GroupedCommand)
@_dataset_option
@click.option(
    "--model",
    "models",
    multiple=True,
    required=True,
    help="Model to answer with (repeatable), e.g. openai/gpt-4.1.",
)
@click.option(
    "--setting",
    type=_setting,
    default="both",
    help="With the image, with the entity in text, or both.",
)
@click.option(
    "--log-dir",
    type=_dir,
    default=Path("logs/gamut"),
    help="Inspect log folder (rerun to continue).",
)
@click.option(
    "--max-connections", type=click.IntRange(min=1), help="Concurrent requests per model."
)
@click.option("--out", type=_file, required=True, help="Responses JSONL to write.")
@click.option(
    "--probe/--no-probe",
    default=True,
    help="Send one tiny request to each model before generating (with an image unless "
    "--setting text_only), so a wrong URL, model, key or parameter ends the command in "
    "seconds (exit 2) with nothing written.",
)
@generation_options
def generate(
    dataset: str,
    models: tuple[str, ...],
    setting: str,
    log_dir: Path,
    max_connections: int | None,
    out: Path,
    probe: bool,
    image_root: Path | None,
    **options: Any,
) -> None:
    """Answer every question with each model, through an Inspect eval set.

    Failed samples are retried; run the same command again to continue where it stopped.
    The Inspect logs stay in --log-dir (open them with `inspect view`). With --epochs N
    each question is answered N times: one row per epoch, `epoch` in its metadata.
    """
    from gamut_eval.generate import generate_responses

    count = generate_responses(
        resolve_dataset_path(dataset),
        models,
        setting,
        log_dir,
        out,
        max_connections=max_connections,
        generation=generation_settings(options),
        probe=probe,
        image_root=image_root,
    )
    err_console.print(f"wrote {count} responses to {out}")


@click.command(cls=GroupedCommand)
@_dataset_option
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Model to answer with (repeatable); or give --responses.",
)
@click.option(
    "--responses",
    type=_file,
    help="Existing answers (JSONL, JSON or Parquet) instead of generating them.",
)
@click.option(
    "--judge",
    "judges",
    multiple=True,
    required=True,
    help=f"Judge model (repeatable: each re-scores the same answers); `{OFFLINE_JUDGE}` is "
    "the built-in offline judge, `gamut/reference` replays the bundled sample's reference "
    "labels (only for the sample's own answers).",
)
@click.option("--setting", type=_setting, default="both", help="Which setting(s) to run.")
@click.option(
    "--out",
    "out_dir",
    type=_dir,
    required=True,
    help="Run folder (rerun with the same folder to continue).",
)
@click.option(
    "--max-connections", type=click.IntRange(min=1), help="Concurrent requests per answering model."
)
@click.option(
    "--fill-missing",
    is_flag=True,
    help="Score an answer that is missing as an empty answer (the model said nothing) "
    "instead of refusing the run; recorded in run.json and shown under the leaderboard.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --responses: count each judge's requests, tokens and cost (with --prices); "
    "send and write nothing.",
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Price table YAML (per million tokens, keyed by model or judge) for the cost "
    "shown after the run and recorded in run.json.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the run in --out if it holds a different one (the verdict store, a "
    "content-addressed cache, is kept).",
)
@calibrate_options
@generation_options
@judge_options(choices=ONLINE_BACKENDS)
def run(
    dataset: str,
    models: tuple[str, ...],
    responses: Path | None,
    judges: tuple[str, ...],
    setting: str,
    out_dir: Path,
    max_connections: int | None,
    fill_missing: bool,
    dry_run: bool,
    prices: Path | None,
    overwrite: bool,
    wait_for_store: float,
    image_root: Path | None,
    **options: Any,
) -> None:
    """Generate answers, judge them with each judge, score, and print the leaderboard.

    \b
    Writes RUN_DIR/responses.jsonl, verdicts.jsonl, scores.jsonl, summary.json, run.json,
    and Inspect logs with every judge's scores in RUN_DIR/logs/ (`inspect view`).
    Interrupted and rerun with the same arguments, it continues where it stopped; a
    different run into a used folder is refused (exit 2) unless --overwrite, and a folder
    another run is at work in is refused (exit 2) in any case. Every
    question must have an answer from every model in every setting run, unless
    --fill-missing. The generation options apply to generated answers (not --responses);
    --epochs above 1 is for `gamut generate` (a run scores one answer per cell).

    \b
    Calibrated scores:  --judge CHEAP --calibrate-with STRONG --calibrate-fraction 0.2
    STRONG grades only the answers to a random fifth of the questions (drawn from --seed
    before any verdict, recorded in run.json) and corrects CHEAP's scores of every answer,
    with intervals (calibrated.json, shown after the leaderboards). With --dry-run, a
    planner shows the expected interval width and cost of each fraction.
    """
    from gamut_eval.run import run_benchmark

    generation = generation_settings(options)
    calibrate, planner = calibrate_request(
        options, lambda name: judge_settings(name, dict(options))
    )
    settings = [judge_settings(judge, dict(options)) for judge in judges]
    if dry_run:
        _dry_run(
            dataset, out_dir, settings, responses, setting, fill_missing, prices,
            image_root, calibrate, planner,
        )  # fmt: skip
        return
    probe = all(s.probe for s in settings)  # --no-probe skips the models' probe too
    options = {
        "models": models,
        "responses": responses,
        "setting": setting,
        "max_connections": max_connections,
        "wait_for_store_s": wait_for_store,
        "fill_missing": fill_missing,
        "overwrite": overwrite,
        "prices": _prices(prices),
        "generation": generation,
        "probe": probe,
        "image_root": image_root,
    }
    path = resolve_dataset_path(dataset)
    with PassProgress() as progress:
        if calibrate is None:
            result = run_benchmark(path, out_dir, settings, on_event=progress, **options)
        else:
            from gamut_eval.calibration import run_calibrated

            calibrated = run_calibrated(
                path, out_dir, settings, calibrate, on_event=progress, **options
            )
            result = calibrated.run
    print_result(result)
    if calibrate is not None:
        print_calibration(calibrated.calibration, calibrated.notes)
        err_console.print(f"wrote {out_dir / 'calibrated.json'}", markup=False, highlight=False)


@click.command(cls=GroupedCommand)
@click.option("--out", "out_dir", type=_dir, default=Path("runs/demo"), help="Run folder.")
@click.option("--overwrite", is_flag=True, help="Replace a different run in --out.")
def demo(out_dir: Path, overwrite: bool) -> None:
    """The whole flow on the bundled sample benchmark, offline: no API key, no network.

    Scores the sample's recorded answers of three illustrative systems in both settings
    with two judges: the built-in offline judge (gamut/offline, a low-fidelity stand-in
    for an LLM judge that matches words) and the reference judge (gamut/reference, which
    replays the reference labels written with the sample). Prints the leaderboards, the
    judges' scores side by side and how far their rankings agree, the offline judge's
    scores calibrated with the reference labels of the six questions its threshold was not
    fitted on (calibrated.json), then writes the HTML report. Rerun with the same --out,
    it continues the same run. With an API key, `gamut run --model ... --judge ...` does
    the same with real models and judges.
    """
    from gamut_eval.analysis import default_output, report_for_run, write_report
    from gamut_eval.cli._report import print_summary
    from gamut_eval.judge import REFERENCE_JUDGE, JudgeSettings
    from gamut_eval.run import run_benchmark

    judges = [JudgeSettings(judge=OFFLINE_JUDGE), JudgeSettings(judge=REFERENCE_JUDGE)]
    earlier = None if overwrite else _earlier_demo(out_dir, judges)
    if earlier is not None:
        err_console.print(
            f"{out_dir} holds the demo of an earlier version ({earlier}); "
            "replacing it with this one (the verdict store is kept)",
            markup=False,
        )
        overwrite = True
    with PassProgress() as progress:
        result = run_benchmark(
            sample_dir() / "dataset.jsonl",
            out_dir,
            judges,
            responses=sample_dir() / "responses.jsonl",
            on_event=progress,
            overwrite=overwrite,
        )
    print_result(result, leaderboards=False, where=False)
    calibration, changed = _demo_calibration(out_dir, result.up_to_date)
    # RUN_DIR/report.html with default settings. A run that is up to date, with the same
    # calibrated.json, keeps a report.html that is there: it was made from the same
    # verdicts by the same code (a run that changes the verdicts removes it).
    path = default_output(out_dir, "html")
    kept = result.up_to_date and not changed and path.is_file()
    report = report_for_run(out_dir, explanations=not kept)  # the page's drill-down needs them
    if not kept:
        write_report(report, "html", path)
    print_summary(report, calibrated=False)  # the demo's calibrated leaderboard is its own
    parts = fitted(partial(_demo_calibration_table, calibration, result.summary), console)
    print_fitted(console, parts)
    console.print(DEMO_CALIBRATION_NOTE, markup=False, highlight=False)
    print_where(result.out_dir)
    print_plain(f"HTML report: {path} (open it with: gamut view {out_dir})")


def _demo_calibration(out_dir: Path, up_to_date: bool) -> tuple[dict[str, Any], bool]:
    """The offline judge calibrated with the reference judge on the held-out questions (the
    six whose reference labels its threshold was not fitted on), as OUT/calibrated.json
    holds it (written when it differs); and whether that file changed (the HTML report
    shows it). A run that is up to date keeps the file its previous run wrote."""
    from gamut_eval.calibration import CALIBRATED_FILE, calibrate_run, write_calibration
    from gamut_eval.data import TUNING_QUESTIONS
    from gamut_eval.dataset import load_dataset
    from gamut_eval.judge import REFERENCE_JUDGE

    questions = load_dataset(sample_dir() / "dataset.jsonl").by_id()
    held_out = sorted(q for q in questions if q not in TUNING_QUESTIONS)
    path = out_dir / CALIBRATED_FILE
    try:
        written = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        written = None
    ours = (
        isinstance(written, dict)
        and written.get("judge") == OFFLINE_JUDGE
        and written.get("calibrated_with") == REFERENCE_JUDGE
        and written.get("fraction") is None
        and sorted(written.get("sample") or []) == held_out
        and isinstance(written.get("rows"), list)
    )
    if up_to_date and ours:
        assert isinstance(written, dict)
        return written, False
    calibration = calibrate_run(out_dir, REFERENCE_JUDGE, judge=OFFLINE_JUDGE, sample=held_out)
    content = calibration.to_json()
    if content == written:  # a rerun that changes nothing writes nothing anew
        return content, False
    write_calibration(calibration, path)
    return content, True


DEMO_CALIBRATION_NOTE = (
    "Six questions are enough to show the direction and rough size of the offline judge's "
    "bias (it cannot see contradictions, so it flatters sample/confused most), not to "
    "guarantee the intervals: each rests on six numbers per model, and samples that small "
    "can undercover (docs/method.md)."
)


def _demo_calibration_table(
    calibration: dict[str, Any], summary: pd.DataFrame, name: Namer, level: int
) -> Table:
    """model, setting, calibrated score and interval, both judges' scores of every answer,
    the reference judge's on the sample, and the answers in it (from calibrated.json's
    content)."""
    from rich import box
    from rich.table import Table

    from gamut_eval.cli._report import x100

    keys = summary[["model", "setting", "judge"]].astype(str).itertuples(index=False, name=None)
    full = dict(zip(keys, summary["gamut"].to_numpy(dtype=float).tolist(), strict=True))
    judge, strong = str(calibration["judge"]), str(calibration["calibrated_with"])
    k = len(calibration["sample"])
    cheap_head, strong_head = (n.rsplit("/", 1)[-1] for n in (judge, strong))
    table = Table(
        title=f"Calibrated Gamut x100 ({k} of {calibration['n_questions']} questions)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        caption=f"{judge} corrected by {strong} on {k} questions; "
        f"{cheap_head}, {strong_head}: each judge on every answer"
        + (f"; on {k}: {strong_head} on the sample alone" if level < 1 else "")
        + "; k: answers in the sample",
    )
    percent = round(100 * float(calibration["confidence"]))
    for column in ("model", "setting"):
        table.add_column(column, no_wrap=True)
    numbers = ["gamut", f"{percent}% CI", cheap_head, strong_head]
    numbers += [f"on {k}"] if level < 1 else []
    for column in [*numbers, "k"]:
        table.add_column(column, justify="right", no_wrap=True)
    rows = sorted(calibration["rows"], key=lambda r: (str(r["setting"]), -_or_low(r["gamut"])))
    for row in rows:
        model, setting = str(row["model"]), str(row["setting"])
        cells = [
            name(model),
            setting,
            x100(row["gamut"]),
            f"[{x100(row['ci_low'])},{x100(row['ci_high'])}]",
            x100(row["naive_judge"]),
            x100(full.get((model, setting, strong))),
        ]
        cells += [x100(row["naive_calibrated_with"])] if level < 1 else []
        table.add_row(*cells, str(row["n_calibration"]))
    return table


def _or_low(value: object) -> float:
    """A score to sort by, a missing one last."""
    return float(value) if isinstance(value, int | float) else -math.inf


def _earlier_demo(out: Path, judges: Sequence[JudgeSettings]) -> str | None:
    """How ``out`` holds ``gamut demo``'s run as earlier versions made it, or None: the
    sample's dataset and answers judged by the offline judge alone, or by this demo's
    judges under an earlier judge prompt or judge settings. Only those are replaced
    without --overwrite (a rerun of the demo continues its run, as before)."""
    from gamut_eval._folder import file_sha256
    from gamut_eval.judge import PROMPT_VERSION
    from gamut_eval.records import RunIdentity

    try:
        recorded = RunIdentity.model_validate(
            json.loads((out / "run.json").read_text(encoding="utf-8"))["identity"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sample = sample_dir()
    if (
        recorded.models
        or recorded.dataset_sha256 != file_sha256(sample / "dataset.jsonl")
        or recorded.responses_sha256 != file_sha256(sample / "responses.jsonl")
    ):
        return None
    names = [judge.get("judge") for judge in recorded.judges]
    if names == [OFFLINE_JUDGE]:
        return "the offline judge alone"
    if names != [j.judge for j in judges]:
        return None
    current = [j.verdict_identity() for j in judges]
    if recorded.prompt_version != PROMPT_VERSION or recorded.judges != current:
        return "an earlier judge prompt"
    return None


COMMANDS = [generate, run, demo]


# -- what a run prints ---------------------------------------------------------------------
# What ``gamut run`` and ``gamut demo`` print after a run: leaderboards, what each judge
# did, tokens and cost, where the results are. Tables are fitted to the terminal
# (``fitted``): a model's or judge's name is never cut.


def _usage_table(result: RunResult, name: Namer, compact: bool) -> Table:
    from gamut_eval.cli._report import table_with

    manifest = result.manifest
    assert manifest is not None
    columns = [("", "text"), ("", "name"), ("input", "number"), ("cached input", "number")]
    columns += [("cache writes", "number"), ("output", "number"), ("cost", "number")]
    title = "Tokens (and estimated cost)" if manifest.currency else "Tokens"
    table = table_with(title, columns, compact=compact)
    rows = [*(("model", m, u) for m, u in manifest.model_usage.items())]
    rows += [("judge", j, u) for j, u in manifest.judge_usage.items()]
    for kind, who, usage in rows:
        if not (usage.input or usage.output or usage.cost):
            continue  # the offline and reference judges send nothing
        cost = "n/a" if usage.cost is None else f"{usage.cost:,.4f} {manifest.currency}"
        table.add_row(kind, name(who), f"{usage.input:,}", f"{usage.cached_input:,}",
                      f"{usage.cache_write_input:,}", f"{usage.output:,}", cost)  # fmt: skip
    return table


def _print_usage(result: RunResult) -> None:
    """Tokens and estimated cost per answering model and judge, when any were used."""
    manifest = result.manifest
    if manifest is None:
        return
    used = [*manifest.model_usage.values(), *manifest.judge_usage.values()]
    if not any(u.input or u.output or u.cost for u in used):
        return
    parts = fitted(lambda name, level: _usage_table(result, name, level >= 1), err_console)
    print_fitted(err_console, parts)


def print_where(out_dir: Path) -> None:
    logs = (out_dir / "logs").is_dir()
    more = f"; Inspect logs with the scores: inspect view --log-dir {out_dir}/logs" if logs else ""
    if not (out_dir / "report.html").is_file():
        more += f"; the HTML report: gamut view {out_dir}"
    print_plain(
        f"results in {out_dir}/ (scores.jsonl, verdicts.jsonl, summary.json, run.json{more})",
        err=True,
    )
    if not logs and not extra_installed("inspect"):
        print_plain(
            "no Inspect logs (inspect view): they need the optional 'inspect' extra: "
            + install_command("inspect"),
            err=True,
        )


def print_result(result: RunResult, *, leaderboards: bool = True, where: bool = True) -> None:
    """The leaderboards (one per setting), missing answers filled, each judge's counts,
    token usage, and where the files are."""
    from gamut_eval.cli._report import summary_table

    summary = result.summary
    title = "Leaderboard (Gamut score x100)"
    for setting in ("multimodal", "text_only") if leaderboards else ():
        part = summary[summary["setting"] == setting] if "setting" in summary.columns else summary
        if len(part):
            print_fitted(console, fitted(partial(summary_table, part, title), console))
    if result.filled:
        shown = "; ".join(f"{f.question_id} / {f.model} / {f.setting}" for f in result.filled[:5])
        more = f" and {len(result.filled) - 5} more" if len(result.filled) > 5 else ""
        console.print(
            f"[yellow]{len(result.filled)} missing answer(s) were scored as empty answers "
            f"(--fill-missing):[/yellow] {shown}{more}; listed in run.json"
        )
    for judge, report in result.reports.items():
        stats = report.stats
        warn_flagged(stats)
        print_plain(
            f"{judge}: {report.rows} verdicts ({stats.cached} reused from the store, "
            f"{stats.judged} judged now); {report.unscored} unscored",
            err=True,
        )
    _print_usage(result)
    if where:
        print_where(result.out_dir)
