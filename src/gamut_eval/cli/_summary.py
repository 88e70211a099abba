"""The terminal summary of a report: leaderboards, scores per judge, judge agreement,
modality. Every table is fitted to the console (``_fit.fitted``): model and judge names
are never cut; when the table does not fit it gets shorter headers, then short names and
a legend."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from gamut_eval.cli._fit import Namer, fitted

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from gamut_eval.analysis import Report

__all__ = ["interval_text", "summary_renderables", "table_with"]


def table_with(
    title: str, columns: list[tuple[str, str]], *, compact: bool = False, caption: str = ""
) -> Table:
    """A table whose columns are (header, kind): ``name`` (a model or judge id, left),
    ``text`` (left, may wrap) or ``number`` (right). Names and numbers never wrap; every
    column folds rather than cuts. ``compact``: no vertical rules and one space between
    columns."""
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
    from gamut_eval.analysis import format_cell

    judge = report.meta.primary_judge
    compact, tiers = level >= 1, level < 2
    shares = ("omit", "contr", "unsc") if compact else ("omits", "contradicts", "unscored")
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


def summary_renderables(report: Report, console: Console) -> list[RenderableType]:
    """The concise terminal summary: leaderboards (the primary judge), scores per judge
    and judge agreement (with two or more judges), modality; each fitted to ``console``."""
    out: list[RenderableType] = []
    for setting in report.meta.settings:
        out += fitted(partial(_leaderboard, report, setting), console)
    if report.judge_pairs:
        for setting in report.meta.settings:
            out += fitted(partial(_judge_scores, report, setting), console)
        out += fitted(partial(_judges, report), console)
    if report.modality_summary:
        out += fitted(partial(_modality, report), console)
    return out
