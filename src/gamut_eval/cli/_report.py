"""``gamut score``: score cards from verdicts; ``gamut report`` and ``gamut view``: the
tables and plots of a finished run, from its stored results.

The analysis package (pandas, pyarrow, Jinja) and the table code are imported inside the
functions, so that ``gamut score --help``, ``gamut report --help`` and every other command
start without them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gamut_eval.cli._common import (
    DATASET_PATH,
    HUB_RUN,
    RUN_FOLDER,
    console,
    dump_json,
    err_console,
    image_root_option,
    out_option,
    print_plain,
    write_output,
)
from gamut_eval.cli._main import GroupedCommand
from gamut_eval.cli._terminal import Namer, fitted, print_fitted
from gamut_eval.errors import InputError, ValidationError

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console, RenderableType
    from rich.table import Table

    from gamut_eval.analysis import Report
    from gamut_eval.rubric import Checklist
    from gamut_eval.scoring import ScoreCard, ScoringParams

_FORMATS: tuple[str, ...] = ("html", "md", "csv", "parquet", "json")
"""``gamut_eval.analysis._export.FORMATS``, spelled out to keep the import lazy (a test
checks that the two agree)."""

_DEFAULT_EMBEDDINGS = "sentence-transformers/all-MiniLM-L6-v2"
"""``gamut_eval.analysis._diversity.DEFAULT_EMBEDDING_MODEL``, spelled out to keep the import
lazy (a test checks that the two agree)."""


def print_summary(report: Report, *, calibrated: bool = True) -> None:
    """The terminal summary, then the report's notes (to standard error, never cut).
    ``calibrated``: show the calibrated leaderboard (the demo shows its own)."""
    print_fitted(console, summary_renderables(report, console, calibrated=calibrated))
    for note in report.meta.notes:
        print_plain(f"note: {note}", err=True)


@click.command(cls=GroupedCommand)
@click.argument("run_dir", type=RUN_FOLDER)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(_FORMATS),
    default="html",
    help="html: one self-contained page; md; json (every table, documented keys); "
    "csv or parquet: a folder with one file per table.",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output file (a folder for csv/parquet; `-` for standard output, plain text for "
    "piping: html, md, json, or one table as csv). "
    "Default: RUN_DIR/report.<format>, or RUN_DIR/report/ for csv/parquet (for an hf:// "
    "run, in the working folder).",
)
@click.option(
    "--table",
    "table_name",
    default=None,
    metavar="NAME",
    help="With -o -: print only this table (leaderboard, judge_scores, judge_pairs, "
    "reference_agreement, modality, ...; see docs/report.md) as md, csv or json. "
    "csv to standard output prints the leaderboard unless --table names another.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    help="Seed of the bootstrap resamples (recorded in the report).",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=1000,
    help="Bootstrap resamples of the questions.",
)
@click.option(
    "--families",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="YAML mapping of model id (or glob) -> family, for self-preference. "
    "Default: the provider part of each id.",
)
@click.option(
    "--dataset",
    type=DATASET_PATH,
    default=None,
    help="The run's dataset, when it is no longer where run.json says (`sample`: the "
    "bundled sample).",
)
@click.option(
    "--embeddings",
    is_flag=False,
    flag_value=_DEFAULT_EMBEDDINGS,
    default=None,
    metavar="[MODEL]",
    help="Question diversity on sentence embeddings instead of TF-IDF: alone, the official "
    f"{_DEFAULT_EMBEDDINGS}; or a sentence-transformers model name or local folder. Needs "
    "pip install 'gamut-eval[embeddings]' (the model is downloaded once into the Hugging "
    "Face cache); without it the report uses TF-IDF and says so.",
)
def report(
    run_dir: Path, fmt: str, out: Path | None, table_name: str | None, seed: int,
    resamples: int, families: Path | None, dataset: Path | None, embeddings: str | None,
) -> None:  # fmt: skip
    """Tables and plots of a finished run: leaderboard, judge robustness, modality, diversity.

    \b
    Computed from RUN_DIR's stored results only (scores.jsonl, verdicts.jsonl, run.json),
    with bootstrap intervals over questions; the same seed gives the same report.
      gamut report runs/demo                      # RUN_DIR/report.html
      gamut report runs/x --format json -o x.json
      gamut report runs/x --format csv -o tables/ # one CSV per table
      gamut report runs/x --format md -o - | less # to standard output (no colour)
      gamut report runs/x --format csv -o - --table judge_scores
      gamut report runs/x --embeddings            # diversity on MiniLM embeddings
      gamut report hf://datasets/me/runs/x -o x.html   # a run pushed to the Hub
    """
    from gamut_eval._lock import hold_run_folder_of
    from gamut_eval.analysis import (
        ReportConfig,
        default_output,
        load_families,
        render_table,
        render_text,
        report_for_run,
        write_report,
    )

    config = ReportConfig(
        seed=seed,
        resamples=resamples,
        families=load_families(families) if families else {},
        families_file=str(families) if families else None,
        embeddings=embeddings,
    )
    if table_name is not None and out != Path("-"):
        raise InputError("--table selects what -o - prints; add -o - (or leave --table out)")
    if out == Path("-") and fmt == "parquet":
        raise InputError("parquet output is a folder of binary tables; give -o FOLDER")
    result = report_for_run(run_dir, config, dataset, explanations=fmt == "html")
    if out == Path("-"):
        if fmt == "csv" or table_name is not None:
            text = render_table(result, fmt, table_name or "leaderboard")
        else:
            text = render_text(result, fmt)
        click.echo(text, nl=False)
        return
    here = Path.cwd() if click.get_current_context().meta.get(HUB_RUN) else run_dir
    target = out or default_output(here, fmt)  # a run from the Hub: not into the Hub cache
    with hold_run_folder_of(target):  # refused while a run holds the folder
        written = write_report(result, fmt, target)
    print_summary(result)
    where = target if len(written) == 1 else f"{target}/ ({len(written)} files)"
    print_plain(f"report: {where}")


@click.command(cls=GroupedCommand)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--no-browser",
    is_flag=True,
    help="Do not open a browser: serve the report on 127.0.0.1 and print its URL.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve the report on this port of 127.0.0.1 and print its URL (0: any free "
    "port, the default when serving).",
)
def view(run_dir: Path, no_browser: bool, port: int | None) -> None:
    """Open a run's HTML report in the browser, or serve it on localhost.

    \b
    Opens RUN_DIR/report.html (writing it first, with `gamut report`'s defaults, when the
    run has none). Without a graphical browser (a headless machine: no DISPLAY or
    WAYLAND_DISPLAY), with --no-browser or with --port, it serves the report on
    127.0.0.1 instead and prints the URL; Ctrl+C stops it. Only the report is served.
      gamut view runs/demo
      gamut view runs/demo --no-browser --port 8765   # then open the URL (or forward it)
    """
    import sys

    from gamut_eval.analysis import ReportServer, ensure_report, has_browser, open_in_browser

    if run_dir.is_dir() and not (run_dir / "report.html").is_file():
        err_console.print("no report.html yet: writing it first (as `gamut report` does)...")
    path, written = ensure_report(run_dir)
    if written:
        print_plain(f"report: {path} (written now)")
    browser = not no_browser and has_browser()
    if browser and port is None and open_in_browser(path.resolve().as_uri()):
        print_plain(f"opened {path} in the browser")
        return
    server = ReportServer(path, port or 0)
    try:
        click.echo(f"serving {path} at {server.url} (Ctrl+C to stop)")
        sys.stdout.flush()
        if browser and port is not None:
            open_in_browser(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
    finally:
        server.server_close()


# -- gamut score ---------------------------------------------------------------------------
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

    from gamut_eval._files import read_document
    from gamut_eval.rubric import Checklist, pydantic_details

    try:
        return Checklist.model_validate(read_document(path))
    except pydantic.ValidationError as exc:
        raise ValidationError([d.in_file(path) for d in pydantic_details(exc)]) from None


def x100(value: object) -> str:
    """A score x100 to one decimal; an em dash for a missing one (None, NaN, not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return "—"
    return f"{100 * value:.1f}"


def _card_table(card: ScoreCard) -> Table:
    from rich.table import Table

    from gamut_eval.scoring import Verdict

    table = Table(title="Score card (x100)")
    verdicts = (Verdict.MEETS.value, "partial", Verdict.MISSING.value, Verdict.CONTRADICTS.value)
    for column in ("tier", "score", *verdicts, "unscored"):
        table.add_column(column, justify="left" if column == "tier" else "right")
    for tier, counts in card.counts.items():
        table.add_row(
            tier.value,
            x100(card.tiers.get(tier)),
            *(str(n) for n in counts.model_dump().values()),  # TierCounts' fields, in order
        )
    table.add_section()
    gamut = x100(card.gamut)
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
    unscored = ("unsc", "unsc. checks") if compact else ("unscored", "unsc. checks")
    columns = [*keys, "n", unscored[0], "gamut", *(("AC", "V", "C") if tiers else ()), unscored[1]]
    columns += ["paired"] if paired else []
    kinds = [(c, "name" if c in keys else "number") for c in columns]
    table = table_with(title, kinds, compact=compact)
    unpaired = False
    for values in summary.sort_values("gamut", ascending=False).to_dict(orient="records"):
        missing = int(values["missing_questions"]) if paired else 0
        unpaired |= missing > 0
        rate = values["unscored_rate"]
        table.add_row(
            *(name(str(values[k])) if k != "setting" else str(values[k]) for k in keys),
            str(values["scored"]),
            str(values["responses"] - values["scored"]),
            f"[bold]{x100(values['gamut'])}[/bold]",
            *(x100(values[t]) for t in tiers),
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
    from gamut_eval._files import read_mapping
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
    image_root: Path | None,
) -> None:
    from gamut_eval._lock import hold_run_folder_of
    from gamut_eval._tables import json_records, table_format, write_rows
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
        write_output(dump_json(json_records(summary)), None)
    else:
        parts = fitted(lambda name, level: summary_table(summary, name=name, level=level), console)
        print_fitted(console, parts)


COMMANDS = [score, report, view]


# -- the terminal summary of a report ------------------------------------------------------
# Leaderboards, scores per judge, judge agreement, modality. Every table is fitted to the
# console (``fitted``): model and judge names are never cut; when the table does not fit
# it gets shorter headers, then short names and a legend.


def table_with(
    title: str, columns: list[tuple[str, str]], *, compact: bool = False, caption: str = ""
) -> Table:
    """A table whose columns are (header, kind): ``name`` (a model or judge id, left),
    ``text`` (left, may wrap) or ``number`` (right). Names and numbers never wrap; every
    column folds rather than cuts. ``compact``: no vertical rules and one space between
    columns."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption or None)
    if compact:
        table.box, table.pad_edge, table.collapse_padding = box.SIMPLE_HEAD, False, True
    for header, kind in columns:
        table.add_column(
            header,
            justify="right" if kind == "number" else "left",
            no_wrap=kind != "text",
            overflow="fold",
        )
    return table


def interval_text(low: float | None, high: float | None, unit: str, compact: bool) -> str:
    """``[low, high]`` (``[low,high]`` when compact), or an em dash."""
    from gamut_eval.analysis import format_cell

    if low is None or high is None:
        return "—"
    sep = "," if compact else ", "
    return f"[{format_cell(low, unit)}{sep}{format_cell(high, unit)}]"


def _leaderboard(report: Report, setting: str, name: Namer, level: int) -> Table:
    from rich.markup import escape

    from gamut_eval.analysis import format_cell
    from gamut_eval.scoring import Verdict

    judge = report.meta.primary_judge
    compact, tiers = level >= 1, level < 2
    shares = (
        ("omit", "contr", "unsc") if compact else ("omits", Verdict.CONTRADICTS.value, "unscored")
    )
    columns = [("model", "name"), ("gamut", "number"), ("95% CI", "number")]
    columns = [*([] if compact else [("#", "number")]), *columns]
    columns += [(c, "number") for c in (*(("AC", "V", "C") if tiers else ()), *shares)]
    caption = "omit, contr, unsc: checks missing, contradicted, unscored" if compact else ""
    if not tiers:
        caption += "; tier scores (AC, V, C) need a wider terminal"
    title = escape(f"Leaderboard (Gamut x100) — {setting}, judge {judge}")
    table = table_with(title, columns, compact=compact, caption=caption)
    for row in report.leaderboard:
        if row.setting != setting or row.judge != judge:
            continue
        table.add_row(
            *([] if compact else [str(row.rank)]),
            escape(name(row.model)),
            f"[bold]{format_cell(row.gamut, 'score')}[/bold]",
            interval_text(row.gamut_low, row.gamut_high, "score", compact),
            *(format_cell(v, "score") for v in
              ((row.answer_critical, row.valuable, row.context) if tiers else ())),
            *(format_cell(v, "rate") for v in
              (row.omission_rate, row.contradiction_rate, row.unscored_rate)),
        )  # fmt: skip
    return table


def _judge_scores(report: Report, setting: str, name: Namer, level: int) -> Table:
    """Table 2 as published: a row per model (in the primary judge's order), a column per
    judge."""
    from rich.markup import escape

    from gamut_eval.analysis import format_cell

    judges = report.meta.judges
    cells = {(r.model, r.judge): r.gamut for r in report.judge_scores if r.setting == setting}
    columns = [("model", "name"), *((escape(name(j)), "number") for j in judges)]
    table = table_with(f"Gamut x100 per judge — {setting}", columns, compact=level >= 1)
    primary = report.meta.primary_judge
    for row in report.leaderboard:
        if row.setting == setting and row.judge == primary:
            scores = (format_cell(cells.get((row.model, j)), "score") for j in judges)
            table.add_row(escape(name(row.model)), *scores)
    return table


def _judges(report: Report, name: Namer, level: int) -> Table:
    from rich.markup import escape

    from gamut_eval.analysis import format_cell

    compact, interval = level >= 1, level < 2
    columns = [("setting", "name"), ("judge a", "name"), ("judge b", "name"), ("tau-b", "number")]
    columns += [("95% CI", "number")] if interval else []
    columns += [("swaps", "number"), ("gap", "number"), ("largest gap", "name")]
    title = "Judge agreement (Kendall tau-b between rankings)"
    caption = "swaps: pairs of models ordered differently (adjacent ones in brackets)"
    if not interval:
        caption += "; the interval of tau-b needs a wider terminal"
    table = table_with(title, columns, compact=compact, caption=caption)
    for row in report.judge_pairs:
        model = name(row.max_gap_model) if row.max_gap_model else "—"
        table.add_row(
            escape(row.setting),
            escape(name(row.judge_a)),
            escape(name(row.judge_b)),
            format_cell(row.tau_b, "stat"),
            *([interval_text(row.tau_b_low, row.tau_b_high, "stat", compact)] if interval else []),
            f"{row.swapped_pairs} ({row.adjacent_swaps})",
            format_cell(row.max_abs_gap, "score"),
            escape(model),
        )
    return table


def _modality(report: Report, name: Namer, level: int) -> Table:
    from rich.markup import escape

    from gamut_eval.analysis import format_cell

    compact = level >= 1
    heads = ("gap", "sd", "corr") if compact else ("mean gap", "gap sd", "corr(gap, mm)")
    columns = [("judge", "name"), ("tau-b", "number"), ("95% CI", "number")]
    columns += [(h, "number") for h in heads] + ([] if compact else [("95% CI", "number")])
    caption = f"{heads[2]}: correlation of the gap with the multimodal score"
    title = "Modality: text-only minus multimodal (x100)"
    table = table_with(title, columns, compact=compact, caption=caption)
    for row in report.modality_summary:
        corr_interval = interval_text(row.gap_corr_low, row.gap_corr_high, "stat", compact)
        table.add_row(
            escape(name(row.judge)),
            format_cell(row.tau_b, "stat"),
            interval_text(row.tau_b_low, row.tau_b_high, "stat", compact),
            format_cell(row.gap_mean, "score"),
            format_cell(row.gap_sd, "score"),
            format_cell(row.gap_corr, "stat"),
            *([] if compact else [corr_interval]),
        )
    return table


def _calibrated(report: Report, name: Namer, level: int) -> Table:
    """The calibrated leaderboard (RUN_DIR/calibrated.json): one row per model and setting."""
    from rich.markup import escape

    from gamut_eval.analysis import format_cell

    first = report.calibrated[0]
    compact, counts = level >= 1, level < 2
    percent = round(100 * first.confidence)
    columns = [("model", "name"), ("setting", "name"), ("gamut", "number")]
    columns += [(f"{percent}% CI", "number"), ("cheap", "number"), ("strong", "number")]
    columns += [("n", "number"), ("k", "number")] if counts else []
    title = escape(f"Calibrated Gamut x100 ({first.sample_questions} of {first.n_questions} "
                   "questions)")  # fmt: skip
    caption = escape(
        f"{first.judge} corrected by {first.calibrated_with}; cheap: {first.judge} alone; "
        "strong: the sample alone"
        + ("; n: answers; k: answers in the sample" if counts else "; counts: gamut report")
    )
    table = table_with(title, columns, compact=compact, caption=caption)
    for row in report.calibrated:
        table.add_row(
            escape(name(row.model)),
            escape(row.setting),
            f"[bold]{format_cell(row.gamut, 'score')}[/bold]",
            interval_text(row.gamut_low, row.gamut_high, "score", compact),
            format_cell(row.naive_judge, "score"),
            format_cell(row.naive_calibrated_with, "score"),
            *((str(row.n_answers), str(row.n_calibration)) if counts else ()),
        )
    return table


def summary_renderables(
    report: Report, console: Console, *, calibrated: bool = True
) -> list[RenderableType]:
    """The concise terminal summary: leaderboards (the primary judge), the calibrated
    leaderboard (with RUN_DIR/calibrated.json, unless ``calibrated`` is false), scores per
    judge and judge agreement (with two or more judges), modality; each fitted to
    ``console``."""
    out: list[RenderableType] = []
    for setting in report.meta.settings:
        out += fitted(partial(_leaderboard, report, setting), console)
    if calibrated and report.calibrated:
        out += fitted(partial(_calibrated, report), console)
    if report.judge_pairs:
        for setting in report.meta.settings:
            out += fitted(partial(_judge_scores, report, setting), console)
        out += fitted(partial(_judges, report), console)
    if report.modality_summary:
        out += fitted(partial(_modality, report), console)
    return out
