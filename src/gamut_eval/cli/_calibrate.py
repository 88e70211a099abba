"""``gamut calibrate`` and ``gamut calibration-sample``: calibrated scores of a finished run,
and the random list of questions for people to label; and the calibration options of
``gamut run`` (``calibrate_options``), what it prints of them, and its dry run's planner.

Kept cheap to import (``gamut --help`` loads every command module): pandas, NumPy and the
calibration code are imported inside the commands.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gamut_eval.cli._common import (
    DATASET_PATH,
    HUB_RUN,
    RUN_FOLDER,
    console,
    dump_json,
    err_console,
    option_stack,
    print_plain,
    write_output,
)
from gamut_eval.cli._main import GroupedCommand

if TYPE_CHECKING:
    from rich.table import Table

    from gamut_eval.calibration import CalibrateWith, Calibration, CalibrationPlan
    from gamut_eval.judge import DryRunReport, JudgeSettings

_FRACTION = click.FloatRange(0.0, 1.0, min_open=True)
_CONFIDENCE = click.FloatRange(0.0, 1.0, min_open=True, max_open=True)
_CALIBRATE = ("calibrate_with", "calibrate_fraction", "seed", "confidence")
_PLANNER = ("calibrate_prior", "calibrate_width")


def _prior(ctx: click.Context, param: click.Parameter, value: str) -> tuple[float, float]:
    try:
        sd, correlation = (float(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected SD,R (two numbers), got {value!r}") from None
    if sd < 0 or not -1.0 <= correlation <= 1.0:
        raise click.BadParameter(f"expected SD >= 0 and -1 <= R <= 1, got {value!r}")
    return sd, correlation


calibrate_options = option_stack(
    click.option(
        "--calibrate-with",
        metavar="JUDGE|FILE",
        help="Calibrated scores: a strong judge grades the answers to a random sample of "
        "the questions (all models and settings of each) and corrects the one --judge, "
        "with intervals (calibrated.json). Or a verdict file (people's labels, reference "
        "labels) in place of the strong judge.",
    ),
    click.option(
        "--calibrate-fraction",
        type=_FRACTION,
        help="Share of the questions in the calibration sample (0 < F <= 1); a rerun "
        "with a larger one adds questions and keeps what was judged. Without it, a "
        "verdict file that covers only some questions is the sample.",
    ),
    click.option(
        "--seed",
        type=int,
        default=0,
        help="Seed of the calibration sample's draw (recorded in run.json).",
    ),
    click.option(
        "--confidence",
        type=_CONFIDENCE,
        default=0.95,
        help="Confidence level of the calibrated intervals.",
    ),
    click.option(
        "--calibrate-prior",
        default="0.3,0.7",
        metavar="SD,R",
        callback=_prior,
        help="With --dry-run: the planner's prior, the sd of the strong judge's "
        "per-answer score and its correlation with the cheap judge's (a run folder "
        "holding both judges' scores is used as a pilot instead).",
    ),
    click.option(
        "--calibrate-width",
        type=click.FloatRange(0.0, min_open=True),
        default=0.10,
        help="With --dry-run: the interval width (score scale) the planner recommends "
        "the smallest fraction for.",
    ),
)
"""``--calibrate-with``, ``--calibrate-fraction``, ``--seed``, ``--confidence`` and the
    dry run planner's ``--calibrate-prior`` and ``--calibrate-width``."""


def calibrate_request(
    options: dict[str, Any], judge: Callable[[str], JudgeSettings]
) -> tuple[CalibrateWith | None, dict[str, Any]]:
    """The ``CalibrateWith`` of a command's calibration options (which it consumes), and
    the planner's options; ``judge`` makes a strong judge's settings from its name (with
    the command's judge options). A fraction without --calibrate-with is refused."""
    from gamut_eval.calibration import CalibrateWith

    values = {name: options.pop(name) for name in _CALIBRATE}
    planner = {name: options.pop(name) for name in _PLANNER}
    strong = values["calibrate_with"]
    if strong is None:
        if values["calibrate_fraction"] is not None:
            raise click.UsageError("--calibrate-fraction needs --calibrate-with")
        return None, planner
    path = Path(strong)
    if path.suffix.lower() in (".jsonl", ".json", ".parquet") and not path.is_file():
        raise click.BadParameter(f"{strong}: no such verdict file", param_hint="'--calibrate-with'")
    request = CalibrateWith(
        strong=path if path.is_file() else judge(strong),
        fraction=values["calibrate_fraction"],
        seed=values["seed"],
        confidence=values["confidence"],
    )
    return request, planner


def print_calibration(result: Calibration, notes: tuple[str, ...] | list[str] = ()) -> None:
    """The calibrated leaderboard and the paired differences, with their notes."""
    from gamut_eval.cli._terminal import fitted, print_fitted

    for note in dict.fromkeys([*notes, *result.notes]):
        err_console.print(f"note: {note}", markup=False, highlight=False)
    print_plain(
        f"{result.judge} calibrated with {result.calibrated_with} on {len(result.sample)} of "
        f"{result.n_questions} questions"
    )
    print_fitted(console, fitted(lambda name, level: _rows_table(result, name, level), console))
    if len(result.differences):
        parts = fitted(lambda name, level: _differences_table(result, name, level), console)
        print_fitted(console, parts)


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.4f}"


def print_plan(plan: CalibrationPlan, cheap: DryRunReport, strong: DryRunReport | None) -> None:
    """The planner's table: per fraction, the questions sampled, the expected interval
    width (x100), the strong sample's alone, and what each judge costs (the strong judge's
    dry-run cost scaled to the share of the checks it would grade)."""
    from rich import box
    from rich.table import Table

    currency = cheap.currency or (strong.currency if strong is not None else None)
    table = Table(
        title="Calibration planner: expected interval width (x100) and cost"
        + (f" ({currency})" if currency else ""),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        caption=f"From {plan.source}. k: questions in the sample; width: the calibrated "
        "interval's; alone: the strong sample's alone; checks: share of the checks the "
        "strong judge grades; strong, total: cost at standard prices, the strong judge's "
        "dry-run cost scaled to its checks; *: recommended",
    )
    for column in ("fraction", "k", "width", "alone", "checks", "strong", "total"):
        table.add_column(column, justify="right", no_wrap=True)
    cheap_cost = cheap.cost_standard
    for row, share in zip(plan.rows, plan.shares, strict=True):
        strong_cost = None
        if strong is not None and strong.cost_standard is not None:
            strong_cost = strong.cost_standard * share
        elif strong is None:
            strong_cost = 0.0  # a verdict file: the labels are made already
        total = None if cheap_cost is None or strong_cost is None else cheap_cost + strong_cost
        table.add_row(
            f"{row.fraction:g}{' *' if row is plan.recommended else ''}",
            str(row.n_calibration),
            _number(100 * row.width, "{:.1f}"),
            _number(100 * row.strong_alone_width, "{:.1f}"),
            f"{100 * share:.0f}%",
            _money(strong_cost),
            _money(total),
        )
    console.print(table)
    best = plan.recommended
    print_plain(
        f"recommended: --calibrate-fraction {best.fraction:g} ({best.n_calibration} "
        f"questions), the smallest whose expected width is at most {100 * plan.target:.1f} "
        f"points (--calibrate-width); the cheap judge grades every answer (cost "
        f"{_money(cheap_cost)}{' ' + currency if currency and cheap_cost is not None else ''})"
    )


def _number(value: object, spec: str) -> str:
    if not isinstance(value, float) or math.isnan(value):
        return "—"
    return spec.format(value)


def _pct(value: object) -> str:
    return _number(value * 100 if isinstance(value, float) else value, "{:.1f}")


def _interval(low: object, high: object) -> str:
    return f"[{_pct(low)}, {_pct(high)}]"


def _rows_table(result: Calibration, name: Callable[[str], str] = str, level: int = 0) -> Table:
    """The calibrated leaderboard; ``level`` 2 leaves out the counts and the width."""
    from rich import box
    from rich.table import Table

    percent = round(100 * result.confidence)
    table = Table(
        title="Calibrated Gamut score (x100)",
        caption="cheap: the cheap judge alone; strong: the strong judge's sample alone; "
        + (
            "n: answers; k: answers in the sample; width: the interval's over the strong sample's"
            if level < 2
            else "answer counts and widths left out (in calibrated.json)"
        ),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in ("model", "setting"):
        table.add_column(column, no_wrap=True)
    numbers = ["gamut", f"{percent}% CI", "cheap", "strong"]
    numbers += ["n", "k", "width"] if level < 2 else []
    for column in numbers:
        table.add_column(column, justify="right", no_wrap=True)
    rows = result.rows.sort_values(["setting", "gamut"], ascending=[True, False])
    for row in rows.itertuples():
        cells = [
            name(str(row.model)),
            str(row.setting),
            _pct(row.gamut),
            _interval(row.ci_low, row.ci_high),
            _pct(row.naive_judge),
            _pct(row.naive_calibrated_with),
        ]
        if level < 2:
            cells += [str(row.n_answers), str(row.n_calibration)]
            cells.append(_number(row.width_ratio, "{:.2f}"))
        table.add_row(*cells)
    return table


def _differences_table(
    result: Calibration, name: Callable[[str], str] = str, level: int = 0
) -> Table:
    """Every paired difference; ``level`` is the fitting level (the columns do not change)."""
    from rich import box
    from rich.table import Table

    percent = round(100 * result.confidence)
    table = Table(
        title="Paired differences (x100, same questions)", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in ("setting", "a", "b", "a - b", f"{percent}% CI", "P(sign right)"):
        table.add_column(column, justify="left" if column in ("setting", "a", "b") else "right")
    for row in result.differences.itertuples():
        table.add_row(
            str(row.setting),
            name(str(row.model_a)),
            name(str(row.model_b)),
            _pct(row.difference),
            _interval(row.ci_low, row.ci_high),
            _number(row.p_sign_right, "{:.3f}"),
        )
    return table


@click.command(cls=GroupedCommand, name="calibrate")
@click.argument("run_dir", type=RUN_FOLDER)
@click.option(
    "--with",
    "strong",
    required=True,
    metavar="JUDGE|FILE",
    help="The strong judge: another judge of the run, or a verdict file (people's labels, "
    "reference labels; .jsonl, .json or .parquet).",
)
@click.option("--judge", help="The cheap judge to calibrate (when the run has several others).")
@click.option(
    "--fraction",
    type=_FRACTION,
    help="Share of the questions in the sample (0 < F <= 1). Without it, a verdict file "
    "that covers only some questions is the sample.",
)
@click.option("--seed", type=int, default=0, help="Seed of the sample's draw.")
@click.option(
    "--confidence", type=_CONFIDENCE, default=0.95, help="Confidence level of the intervals."
)
@click.option(
    "--population",
    type=click.Choice(["finite", "infinite"]),
    default="finite",
    help="finite: the target is the strong judge's score on this run's questions; "
    "infinite: on the larger pool they were drawn from.",
)
@click.option(
    "--dataset",
    type=DATASET_PATH,
    help="The run's dataset: its checklists score a verdict file given to --with.",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the JSON (default: RUN_DIR/calibrated.json).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON instead of tables.")
def calibrate(
    run_dir: Path,
    strong: str,
    judge: str | None,
    fraction: float | None,
    seed: int,
    confidence: float,
    population: str,
    dataset: Path | None,
    out: Path | None,
    as_json: bool,
) -> None:
    """Calibrated scores of a finished run: a cheap judge corrected by a strong one.

    \b
    With a judge of the run:  gamut calibrate RUN_DIR --with STRONG --judge CHEAP --fraction 0.25
    With people's labels:     gamut calibrate RUN_DIR --with labels.jsonl --dataset D.jsonl
    The questions of the sample are drawn from --seed before any verdict is read (the same
    list `gamut calibration-sample` writes); the cheap judge's scores of every answer are
    corrected by its error on them (power-tuned prediction-powered inference), so each
    interval holds however wrong the cheap judge is. Writes RUN_DIR/calibrated.json:
    one row per model and setting, and every paired difference of two models.
    """
    from gamut_eval.calibration import CALIBRATED_FILE, calibrate_run, write_calibration

    result = calibrate_run(
        run_dir,
        strong,
        judge=judge,
        fraction=fraction,
        seed=seed,
        confidence=confidence,
        population="finite" if population == "finite" else "infinite",
        dataset=dataset,
    )
    if out is None:
        here = Path.cwd() if click.get_current_context().meta.get(HUB_RUN) else run_dir
        out = here / CALIBRATED_FILE
    written = write_calibration(result, out)
    if as_json:
        for note in result.notes:
            err_console.print(f"note: {note}", markup=False, highlight=False)
        write_output(dump_json(result.to_json()), None)
        return
    print_calibration(result)
    err_console.print(f"wrote {written}")


@click.command(cls=GroupedCommand, name="calibration-sample")
@click.option("--dataset", type=DATASET_PATH, required=True, help="The dataset to sample.")
@click.option("--fraction", type=_FRACTION, required=True, help="Share of the questions.")
@click.option("--seed", type=int, default=0, help="Seed of the sample's draw.")
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The list to write: one question id a line, in draw order.",
)
def calibration_sample(dataset: Path, fraction: float, seed: int, out: Path) -> None:
    """Draw the random list of questions for people (or a strong judge) to label.

    The draw depends on the seed and the question ids only, and is nested: a larger
    --fraction keeps every question of a smaller one. `gamut calibrate --with LABELS
    --fraction F --seed N` checks the labels cover the list.
    """
    from gamut_eval.calibration import write_sample
    from gamut_eval.dataset import load_dataset

    questions = list(load_dataset(dataset).by_id())
    drawn = write_sample(out, questions, fraction, seed)
    err_console.print(f"wrote {out}: {len(drawn)} of {len(questions)} questions")


COMMANDS = [calibrate, calibration_sample]
