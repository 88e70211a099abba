"""``gamut report``: the tables and plots of a finished run, from its stored results.

The analysis package (pandas, pyarrow, Jinja) is imported inside the functions, so that
``gamut report --help`` and every other command start without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from gamut_eval.cli._common import DATASET_PATH, HUB_RUN, RUN_FOLDER, console, err_console
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from gamut_eval.analysis._report import Report

_FORMATS: tuple[str, ...] = ("html", "md", "csv", "parquet", "json")
"""``gamut_eval.analysis._export.FORMATS``, spelled out to keep the import lazy (a test
checks that the two agree)."""

_DEFAULT_EMBEDDINGS = "sentence-transformers/all-MiniLM-L6-v2"
"""``gamut_eval.analysis._diversity_embed.DEFAULT_MODEL``, spelled out to keep the import
lazy (a test checks that the two agree)."""

__all__ = ["COMMANDS", "report", "summary_tables", "write_html_report"]


def _with_interval(value: float | None, low: float | None, high: float | None, unit: str) -> str:
    from gamut_eval.analysis._tables import format_cell

    text = format_cell(value, unit)
    if low is None or high is None:
        return text
    return f"{text} [dim][{format_cell(low, unit)}, {format_cell(high, unit)}][/dim]"


def _leaderboard_table(report: Report, setting: str) -> Table:
    from gamut_eval.analysis._tables import format_cell

    judge = report.meta.primary_judge
    table = Table(title=escape(f"Leaderboard (Gamut x100) — {setting}, judge {judge}"))
    for column in ("#", "model", "gamut [95% CI]", "AC", "V", "C", "omits", "contradicts",
                   "unscored"):  # fmt: skip
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in report.leaderboard:
        if row.setting != setting or row.judge != judge:
            continue
        table.add_row(
            str(row.rank),
            escape(row.model),
            _with_interval(row.gamut, row.gamut_low, row.gamut_high, "score"),
            *(format_cell(v, "score") for v in (row.answer_critical, row.valuable, row.context)),
            *(format_cell(v, "rate") for v in
              (row.omission_rate, row.contradiction_rate, row.unscored_rate)),
        )  # fmt: skip
    return table


def _judges_table(report: Report) -> Table:
    from gamut_eval.analysis._tables import format_cell

    table = Table(title="Judge agreement (Kendall tau-b between rankings)")
    for column in ("setting", "judges", "tau-b [95% CI]", "swaps", "largest gap"):
        table.add_column(column, justify="left" if column in ("setting", "judges") else "right")
    for row in report.judge_pairs:
        table.add_row(
            escape(row.setting),
            escape(f"{row.judge_a} vs {row.judge_b}"),
            _with_interval(row.tau_b, row.tau_b_low, row.tau_b_high, "stat"),
            f"{row.swapped_pairs} ({row.adjacent_swaps} adjacent)",
            escape(f"{format_cell(row.max_abs_gap, 'score')} ({row.max_gap_model or '—'})"),
        )
    return table


def _modality_table(report: Report) -> Table:
    from gamut_eval.analysis._tables import format_cell

    table = Table(title="Modality: text-only minus multimodal (x100)")
    for column in ("judge", "tau-b [95% CI]", "mean gap", "gap sd", "corr(gap, multimodal)"):
        table.add_column(column, justify="left" if column == "judge" else "right")
    for row in report.modality_summary:
        table.add_row(
            escape(row.judge),
            _with_interval(row.tau_b, row.tau_b_low, row.tau_b_high, "stat"),
            format_cell(row.gap_mean, "score"),
            format_cell(row.gap_sd, "score"),
            _with_interval(row.gap_corr, row.gap_corr_low, row.gap_corr_high, "stat"),
        )
    return table


def summary_tables(report: Report) -> list[Table]:
    """The concise terminal summary: leaderboards, judge agreement, modality."""
    tables = [_leaderboard_table(report, s) for s in report.meta.settings]
    if report.judge_pairs:
        tables.append(_judges_table(report))
    if report.modality_summary:
        tables.append(_modality_table(report))
    return tables


def _print_plain(text: str) -> None:
    """A line with a path in it: never wrapped (it must stay copyable) nor read as markup."""
    console.print(text, markup=False, soft_wrap=True, highlight=False)


def write_html_report(run_dir: Path) -> Path:
    """The demo's last step: RUN_DIR/report.html with default settings; prints its path."""
    from gamut_eval.analysis._export import default_output, write_report
    from gamut_eval.analysis._report import report_for_run

    path = default_output(run_dir, "html")
    write_report(report_for_run(run_dir), "html", path)
    _print_plain(f"HTML report: {path}")
    return path


@click.command()
@click.argument("run_dir", type=RUN_FOLDER)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(_FORMATS),
    default="html",
    show_default=True,
    help="html: one self-contained page; md; json (every table, documented keys); "
    "csv or parquet: a folder with one file per table.",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output file (a folder for csv/parquet; `-` for standard output). "
    "Default: RUN_DIR/report.<format>, or RUN_DIR/report/ for csv/parquet (for an hf:// "
    "run, in the working folder).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the bootstrap resamples (recorded in the report).",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
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
    "embeddings",
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
    run_dir: Path, fmt: str, out: Path | None, seed: int, resamples: int,
    families: Path | None, dataset: Path | None, embeddings: str | None,
) -> None:  # fmt: skip
    """Tables and plots of a finished run: leaderboard, judge robustness, modality, diversity.

    \b
    Computed from RUN_DIR's stored results only (scores.jsonl, verdicts.jsonl, run.json),
    with bootstrap intervals over questions; the same seed gives the same report.
      gamut report runs/demo                      # RUN_DIR/report.html
      gamut report runs/x --format json -o x.json
      gamut report runs/x --format csv -o tables/ # one CSV per table
      gamut report runs/x --embeddings            # diversity on MiniLM embeddings
      gamut report hf://datasets/me/runs/x -o x.html   # a run pushed to the Hub
    """
    from gamut_eval.analysis._export import (
        FOLDER_FORMATS,
        default_output,
        render_text,
        write_report,
    )
    from gamut_eval.analysis._families import load_families
    from gamut_eval.analysis._report import ReportConfig, report_for_run

    config = ReportConfig(
        seed=seed,
        resamples=resamples,
        families=load_families(families) if families else {},
        families_file=str(families) if families else None,
        embeddings=embeddings,
    )
    result = report_for_run(run_dir, config, dataset)
    if out == Path("-"):
        if fmt in FOLDER_FORMATS:
            raise InputError(f"{fmt} output is a folder of tables; give -o FOLDER")
        click.echo(render_text(result, fmt), nl=False)
        return
    here = Path.cwd() if click.get_current_context().meta.get(HUB_RUN) else run_dir
    target = out or default_output(here, fmt)  # a run from the Hub: not into the Hub cache
    written = write_report(result, fmt, target)
    for table in summary_tables(result):
        console.print(table)
    for note in result.meta.notes:
        err_console.print(f"note: {note}", markup=False, soft_wrap=True)
    where = target if len(written) == 1 else f"{target}/ ({len(written)} files)"
    _print_plain(f"report: {where}")


COMMANDS = [report]
