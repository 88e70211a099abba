"""``gamut score``: score cards from verdicts.

Kept cheap to import (``gamut --help`` loads every command module): pandas and the table
code are imported inside the command that scores a run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.table import Table

from gamut_eval._files import read_document, read_mapping
from gamut_eval.cli._common import (
    DATASET_PATH,
    console,
    dump_json,
    err_console,
    image_root_option,
    out_option,
    write_output,
)
from gamut_eval.cli._main import GroupedCommand
from gamut_eval.errors import InputError, ValidationError

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from gamut_eval.rubric import Checklist
    from gamut_eval.scoring import ScoreCard, ScoringParams

# The rubric and scoring models are imported inside the functions: building pydantic
# models costs more than the rest of `gamut score --help` together.
_TIER_NAMES = ("answer_critical", "valuable", "context")
MAX_UNSCORED_RATE = 0.02
"""``JudgeSettings.max_unscored_rate``'s default, spelled out to keep the import lazy (a
test holds them equal)."""
_TIER_ALIASES = {"ac": "answer_critical", "v": "valuable", "c": "context"} | {
    t: t for t in _TIER_NAMES
}


def _params(lam: float, mu: float, weights: tuple[str, ...]) -> ScoringParams:
    import pydantic

    from gamut_eval.rubric import Tier, pydantic_details
    from gamut_eval.scoring import ScoringParams

    merged: dict[Tier, float] = dict(ScoringParams().weights)
    for spec in weights:
        name, _, value = spec.partition("=")
        alias = _TIER_ALIASES.get(name.strip().lower())
        tier = Tier(alias) if alias else None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if tier is None or math.isnan(number):
            raise InputError(
                f"--weight: expected TIER=NUMBER with TIER one of ac, v, c; got {spec!r}"
            )
        merged[tier] = number
    try:
        return ScoringParams(lam=lam, mu=mu, weights=merged)
    except pydantic.ValidationError as exc:
        raise ValidationError(
            [d.in_file("scoring options") for d in pydantic_details(exc)]
        ) from None


def load_checklist(path: Path) -> Checklist:
    """A checklist JSON file as ``gamut compile`` writes it."""
    import pydantic

    from gamut_eval.rubric import Checklist, pydantic_details

    try:
        return Checklist.model_validate(read_document(path))
    except pydantic.ValidationError as exc:
        raise ValidationError([d.in_file(path) for d in pydantic_details(exc)]) from None


def _fmt(value: float | None) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{100 * value:.1f}"
    )


def _card_table(card: ScoreCard) -> Table:
    from gamut_eval.scoring import Verdict

    table = Table(title="Score card (x100)")
    verdicts = (Verdict.MEETS.value, "partial", Verdict.MISSING.value, Verdict.CONTRADICTS.value)
    for column in ("tier", "score", *verdicts, "unscored"):
        table.add_column(column, justify="left" if column == "tier" else "right")
    for tier, counts in card.counts.items():
        table.add_row(
            tier.value,
            _fmt(card.tiers.get(tier)),
            *(
                str(n)
                for n in (
                    counts.meets,
                    counts.partially_meets,
                    counts.missing,
                    counts.contradicts,
                    counts.unscored,
                )
            ),
        )
    table.add_section()
    gamut = _fmt(card.gamut)
    if card.gamut is None and card.unscored_tiers:
        gamut = "unscored (no scored check in " + ", ".join(t.value for t in card.unscored_tiers)
        gamut += ")"
    table.add_row("[bold]gamut[/bold]", f"[bold]{gamut}[/bold]")
    return table


def summary_table(
    summary: pd.DataFrame,
    title: str = "Gamut score per model (x100, mean over questions)",
    name: Callable[[str], str] = str,
    level: int = 0,
) -> Table:
    """Per-(model, setting, judge) means as a rich table, best first.

    A key column with one value throughout (one judge, one setting) moves into the title.
    Each row gives the responses averaged and those left unscored (no Gamut score); a row
    that lacks k questions another model of its setting and judge is scored on shows
    ``*-k`` under "paired" (its mean is over different questions). ``name`` writes each
    model and judge id (``fitted`` passes short names when the full ones do not fit);
    ``level`` 1 packs the columns closer and shortens two headers, 2 also leaves out the
    tier scores (for narrow terminals).
    """
    keys = [c for c in ("model", "setting", "judge") if c in summary.columns]
    constant = [k for k in keys[1:] if summary[k].nunique() == 1]
    keys = [k for k in keys if k not in constant]
    if constant:
        title += " — " + ", ".join(f"{k}: {summary[k].iloc[0]}" for k in constant)
    paired = "missing_questions" in summary.columns
    compact, tiers = level >= 1, _TIER_NAMES if level < 2 else ()
    table = Table(title=title)
    if compact:
        table.box, table.pad_edge, table.collapse_padding = box.SIMPLE_HEAD, False, True
    unscored = ("unsc", "unsc. checks") if compact else ("unscored", "unsc. checks")
    columns = [*keys, "n", unscored[0], "gamut", *(("AC", "V", "C") if tiers else ()), unscored[1]]
    for column in columns + (["paired"] if paired else []):
        table.add_column(
            column,
            justify="left" if column in keys else "right",
            no_wrap=True,
            overflow="fold",
        )
    unpaired = False
    for values in summary.sort_values("gamut", ascending=False).to_dict(orient="records"):
        missing = int(values["missing_questions"]) if paired else 0
        unpaired |= missing > 0
        rate = values["unscored_rate"]
        table.add_row(
            *(name(str(values[k])) if k != "setting" else str(values[k]) for k in keys),
            str(values["scored"]),
            str(values["responses"] - values["scored"]),
            f"[bold]{_fmt(values['gamut'])}[/bold]",
            *(_fmt(values[t]) for t in tiers),
            "—" if math.isnan(rate) else f"{100 * rate:.1f}%",
            *([f"*-{missing}" if missing else "yes"] if paired else []),
        )
    table.caption = f"n: responses averaged; {unscored[0]}: responses without a Gamut score"
    if compact:
        table.caption += f"; {unscored[1]}: share of checks the judge could not grade"
    if not tiers:
        table.caption += "; tier scores (AC, V, C) need a wider terminal"
    if unpaired:
        table.caption += (
            "; *-k: k questions fewer than another model of its setting and judge "
            "(the means are not over the same questions)"
        )
    return table


@click.command(cls=GroupedCommand)
@click.option(
    "--checklist",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A checklist JSON (from `gamut compile`).",
)
@click.option(
    "--verdicts",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="With --checklist: {check_id: verdict or null}. With --dataset: verdict rows "
    "(.jsonl, .json or .parquet).",
)
@click.option(
    "--dataset",
    type=DATASET_PATH,
    help="A dataset (.jsonl, .json or .parquet), a meta-rubric file (YAML/JSON) or a folder "
    "of them, or `sample` for the bundled sample; scores "
    "every response in a verdict-rows file.",
)
@image_root_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--lam",
    type=float,
    default=0.5,
    help="Credit for partially_meets (0 < lam < 1).",
)
@click.option("--mu", type=float, default=-2.0, help="Score of contradicts (mu < 0).")
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="TIER=W",
    help="Tier weight, e.g. ac=0.6 v=0.3 c=0.1 (repeatable).",
)
@click.option(
    "--max-unscored-rate",
    type=click.FloatRange(0, 1),
    default=MAX_UNSCORED_RATE,
    help="With --dataset: refuse to score (exit 1) when a larger share of one model's checks "
    "in one setting has no verdict, as `gamut judge` and `gamut run` refuse.",
)
@out_option
def score(
    checklist: Path | None,
    verdicts: Path,
    dataset: Path | None,
    as_json: bool,
    lam: float,
    mu: float,
    weights: tuple[str, ...],
    max_unscored_rate: float,
    out: Path | None,
    image_root: Path | None,
) -> None:
    """Score verdicts: one response against a checklist, or every response of a run.

    \b
    One response:   gamut score --checklist C.json --verdicts V.json
    A whole run:    gamut score --dataset D.jsonl --verdicts VERDICTS.jsonl [--out SCORES.jsonl]
    Verdicts are meets, partially_meets, missing, contradicts, or null (unscored: left out of
    the score and reported). A response with a tier whose checks are all unscored gets no
    score. Unknown or missing check ids, questions not in the dataset and two differing
    rows for one check are errors (exit 2, nothing written). Tables are .jsonl, .json or
    .parquet, by extension.
    """
    params = _params(lam, mu, weights)
    if (checklist is None) == (dataset is None):
        raise InputError("give exactly one of --checklist (one response) or --dataset (a run)")
    if checklist is not None:
        _score_one(load_checklist(checklist), verdicts, params, as_json, out)
    else:
        assert dataset is not None  # narrowed above; not input validation
        _score_run(dataset, verdicts, params, as_json, out, max_unscored_rate, image_root)


def _score_one(
    checklist: Checklist, path: Path, params: ScoringParams, as_json: bool, out: Path | None
) -> None:
    from gamut_eval.scoring import score_response

    try:
        verdicts = read_mapping(
            path, "verdicts-object", "expected an object {check_id: verdict or null}"
        )
        card = score_response(checklist, verdicts, params)
    except ValidationError as exc:
        raise ValidationError([d.in_file(path) for d in exc.details]) from None
    if as_json or out is not None:
        write_output(dump_json(card.model_dump(mode="json")), out)
    else:
        console.print(_card_table(card))


def _check_unscored(frame: pd.DataFrame, limit: float) -> None:
    """``UnscoredRateExceeded`` when a judge left more than ``limit`` of one model's checks
    in one setting without a verdict (``gamut judge``'s limit, applied to its rows)."""
    from gamut_eval.judge import unscored_limit_error, unscored_over

    keys = ["judge", "model", "setting"]
    table = frame.assign(**{k: frame.get(k, "") for k in keys})
    counts = table["verdict"].isna().groupby([table[k] for k in keys], observed=True)
    cells: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
    for (judge, model, setting), rows in counts:
        cells.setdefault(str(judge), {})[str(model), str(setting)] = (len(rows), int(rows.sum()))
    lines = [line for judge, c in cells.items() for line in unscored_over(judge, c, limit)]
    if lines:
        raise unscored_limit_error(lines, limit)


def _score_run(
    dataset_path: Path,
    path: Path,
    params: ScoringParams,
    as_json: bool,
    out: Path | None,
    max_unscored_rate: float,
    image_root: Path | None = None,
) -> None:
    from gamut_eval._lock import hold_run_folder_of
    from gamut_eval._tables import table_format, write_rows
    from gamut_eval._verdict_table import read_verdict_table
    from gamut_eval.dataset import load_dataset
    from gamut_eval.records import score_rows
    from gamut_eval.scoring import score_table, summarise_scores

    if out is not None:
        table_format(out)  # an unknown extension is refused before any work
    dataset = load_dataset(dataset_path, long_lived=True, image_root=image_root)
    checklists = dataset.checklists()
    verdict_rows = read_verdict_table(path).frame
    try:
        scores = score_table(verdict_rows, checklists, params)
    except ValidationError as exc:
        raise ValidationError([d.in_file(path) for d in exc.details]) from None
    _check_unscored(verdict_rows, max_unscored_rate)  # no score past the limit, as judge
    if out is not None:
        with hold_run_folder_of(out):  # refused while a run holds the folder
            write_rows(out, score_rows(scores))
        err_console.print(f"wrote {out}")
    summary = summarise_scores(scores)
    if as_json:
        records = summary.astype(object).where(summary.notna(), None).to_dict(orient="records")
        write_output(dump_json(records), None)
    else:
        from gamut_eval.cli._terminal import fitted, print_fitted

        parts = fitted(lambda name, level: summary_table(summary, name=name, level=level), console)
        print_fitted(console, parts)


COMMANDS = [score]
