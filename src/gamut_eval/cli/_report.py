"""``gamut report``: the tables and plots of a finished run, from its stored results.

The analysis package (pandas, pyarrow, Jinja) is imported inside the functions, so that
``gamut report --help`` and every other command start without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from gamut_eval.cli._common import DATASET_PATH, HUB_RUN, RUN_FOLDER, console, err_console
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from rich.console import RenderableType

    from gamut_eval.analysis import Report

_FORMATS: tuple[str, ...] = ("html", "md", "csv", "parquet", "json")
"""``gamut_eval.analysis._export.FORMATS``, spelled out to keep the import lazy (a test
checks that the two agree)."""

_DEFAULT_EMBEDDINGS = "sentence-transformers/all-MiniLM-L6-v2"
"""``gamut_eval.analysis._diversity.DEFAULT_EMBEDDING_MODEL``, spelled out to keep the import
lazy (a test checks that the two agree)."""

__all__ = ["COMMANDS", "print_summary", "report", "summary_tables", "view", "write_html_report"]


def summary_tables(report: Report) -> list[RenderableType]:
    """The concise terminal summary (leaderboards, scores per judge, judge agreement,
    modality), fitted to the console's width."""
    from gamut_eval.cli._summary import summary_renderables

    return summary_renderables(report, console)


def print_summary(report: Report) -> None:
    """The terminal summary, then the report's notes (to standard error, never cut)."""
    from gamut_eval.cli._fit import print_fitted

    print_fitted(console, summary_tables(report))
    for note in report.meta.notes:
        err_console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def _print_plain(text: str) -> None:
    """A line with a path in it: never wrapped (it must stay copyable) nor read as markup."""
    console.print(text, markup=False, soft_wrap=True, highlight=False)


def write_html_report(run_dir: Path, *, summary: bool = False, where: Path | None = None) -> Path:
    """The demo's last step: RUN_DIR/report.html with default settings; prints its path
    (after the terminal summary and the notes, with ``summary``, and the run's files,
    with ``where``)."""
    from gamut_eval.analysis import default_output, report_for_run, write_report

    path = default_output(run_dir, "html")
    result = report_for_run(run_dir)
    write_report(result, "html", path)
    if summary:
        print_summary(result)
    if where is not None:
        from gamut_eval.cli._run_output import print_where

        print_where(where)
    _print_plain(f"HTML report: {path} (open it with: gamut view {run_dir})")
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
    result = report_for_run(run_dir, config, dataset)
    if out == Path("-"):
        if fmt == "csv" or table_name is not None:
            text = render_table(result, fmt, table_name or "leaderboard")
        else:
            text = render_text(result, fmt)
        click.echo(text, nl=False)
        return
    here = Path.cwd() if click.get_current_context().meta.get(HUB_RUN) else run_dir
    target = out or default_output(here, fmt)  # a run from the Hub: not into the Hub cache
    written = write_report(result, fmt, target)
    print_summary(result)
    where = target if len(written) == 1 else f"{target}/ ({len(written)} files)"
    _print_plain(f"report: {where}")


@click.command()
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
        _print_plain(f"report: {path} (written now)")
    browser = not no_browser and has_browser()
    if browser and port is None and open_in_browser(path.resolve().as_uri()):
        _print_plain(f"opened {path} in the browser")
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


COMMANDS = [report, view]
