"""The terminal summary of a report: leaderboards, scores per judge, judge agreement,
modality. Every table is fitted to the console (``_fit.fitted``): model and judge names
are never cut; when they do not fit, short names and a legend are printed instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from gamut_eval.cli._fit import Namer, fitted

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from gamut_eval.analysis._report import Report

__all__ = ["summary_renderables", "table_with"]


def table_with(title: str, columns: list[tuple[str, str]], **options: object) -> Table:
    """A table whose columns are (header, kind): ``name`` (a model or judge id: never
    wrapped, left-aligned), ``text`` (left-aligned) or ``number`` (right-aligned). Every
    column folds rather than cuts."""
    table = Table(title=title, **options)  # type: ignore[arg-type]
    for header, kind in columns:
        table.add_column(
            header,
            justify="right" if kind == "number" else "left",
            no_wrap=kind == "name",
            overflow="fold",
        )
    return table


def _with_interval(value: float | None, low: float | None, high: float | None, unit: str) -> str:
    from gamut_eval.analysis._tables import format_cell

    text = format_cell(value, unit)
    if low is None or high is None:
        return text
    return f"{text} [dim][{format_cell(low, unit)}, {format_cell(high, unit)}][/dim]"


def _leaderboard(report: Report, setting: str, name: Namer) -> Table:
    from gamut_eval.analysis._tables import format_cell

    judge = report.meta.primary_judge
    columns = [("#", "number"), ("model", "name"), ("gamut [95% CI]", "number")]
    columns += [(c, "number") for c in ("AC", "V", "C", "omits", "contradicts", "unscored")]
    table = table_with(escape(f"Leaderboard (Gamut x100) — {setting}, judge {judge}"), columns)
    for row in report.leaderboard:
        if row.setting != setting or row.judge != judge:
            continue
        table.add_row(
            str(row.rank),
            escape(name(row.model)),
            _with_interval(row.gamut, row.gamut_low, row.gamut_high, "score"),
            *(format_cell(v, "score") for v in (row.answer_critical, row.valuable, row.context)),
            *(format_cell(v, "rate") for v in
              (row.omission_rate, row.contradiction_rate, row.unscored_rate)),
        )  # fmt: skip
    return table


def _judge_scores(report: Report, setting: str, name: Namer) -> Table:
    """Table 2 as published: a row per model (in the primary judge's order), a column per
    judge."""
    from gamut_eval.analysis._tables import format_cell

    judges = report.meta.judges
    cells = {(r.model, r.judge): r.gamut for r in report.judge_scores if r.setting == setting}
    columns = [("model", "name"), *((escape(name(j)), "number") for j in judges)]
    table = table_with(f"Gamut x100 per judge — {setting}", columns)
    primary = report.meta.primary_judge
    for row in report.leaderboard:
        if row.setting == setting and row.judge == primary:
            scores = (format_cell(cells.get((row.model, j)), "score") for j in judges)
            table.add_row(escape(name(row.model)), *scores)
    return table


def _judges(report: Report, name: Namer) -> Table:
    from gamut_eval.analysis._tables import format_cell

    columns = [("setting", "text"), ("judge a", "name"), ("judge b", "name")]
    columns += [("tau-b [95% CI]", "number"), ("swaps", "number"), ("largest gap", "text")]
    table = table_with("Judge agreement (Kendall tau-b between rankings)", columns)
    for row in report.judge_pairs:
        model = name(row.max_gap_model) if row.max_gap_model else "—"
        table.add_row(
            escape(row.setting),
            escape(name(row.judge_a)),
            escape(name(row.judge_b)),
            _with_interval(row.tau_b, row.tau_b_low, row.tau_b_high, "stat"),
            f"{row.swapped_pairs} ({row.adjacent_swaps} adjacent)",
            escape(f"{format_cell(row.max_abs_gap, 'score')} ({model})"),
        )
    return table


def _modality(report: Report, name: Namer) -> Table:
    from gamut_eval.analysis._tables import format_cell

    columns = [("judge", "name"), ("tau-b [95% CI]", "number"), ("mean gap", "number")]
    columns += [("gap sd", "number"), ("corr(gap, multimodal)", "number")]
    table = table_with("Modality: text-only minus multimodal (x100)", columns)
    for row in report.modality_summary:
        table.add_row(
            escape(name(row.judge)),
            _with_interval(row.tau_b, row.tau_b_low, row.tau_b_high, "stat"),
            format_cell(row.gap_mean, "score"),
            format_cell(row.gap_sd, "score"),
            _with_interval(row.gap_corr, row.gap_corr_low, row.gap_corr_high, "stat"),
        )
    return table


def summary_renderables(report: Report, console: Console) -> list[RenderableType]:
    """The concise terminal summary: leaderboards (the primary judge), scores per judge
    and judge agreement (with two or more judges), modality; each fitted to ``console``."""
    out: list[RenderableType] = []
    for setting in report.meta.settings:
        out += fitted(lambda n, s=setting: _leaderboard(report, s, n), console)
    if report.judge_pairs:
        for setting in report.meta.settings:
            out += fitted(lambda n, s=setting: _judge_scores(report, s, n), console)
        out += fitted(lambda n: _judges(report, n), console)
    if report.modality_summary:
        out += fitted(lambda n: _modality(report, n), console)
    return out
