"""A report as Markdown: the same tables as the HTML page, without the plots.

Cells are escaped for Markdown tables: model ids and questions are untrusted text, and a
``|`` would break a row, a newline would end it, and ``<``/``>`` would reach renderers that
pass HTML through, so those become escapes or entities.
"""

from __future__ import annotations

from collections.abc import Sequence

from gamut_eval.analysis._report import TABLES, Report
from gamut_eval.analysis._tables import Row, TableSpec, cell_text, display_columns

__all__ = ["markdown_table", "md_escape", "render_markdown"]

_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\n": " ",
        "\r": " ",
    }
)


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell (and inert as HTML)."""
    return text.translate(_ESCAPES)


def markdown_table(spec: TableSpec, rows: Sequence[Row]) -> str:
    """A GitHub-flavoured Markdown table; intervals follow their values in brackets."""
    columns = display_columns(spec.row)
    header = "| " + " | ".join(md_escape(c.header) for c in columns) + " |"
    rule = "|" + "|".join("---:" if c.unit else "---" for c in columns) + "|"
    lines = [header, rule]
    for row in rows:
        cells = []
        for column in columns:
            value, interval = cell_text(row, column)
            cells.append(md_escape(f"{value} {interval}" if interval else value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(report: Report) -> str:
    """Every table of the report, in report order, with a header saying how it was made."""
    meta = report.meta
    pct = f"{100 * meta.confidence:g}%"
    out = [
        f"# Gamut report{': ' + md_escape(meta.run_dir) if meta.run_dir else ''}",
        "",
        f"{meta.questions} questions, {len(meta.models)} models, judges: "
        f"{md_escape(', '.join(meta.judges))}; settings: {md_escape(', '.join(meta.settings))}. "
        f"Scores x100, rates in %; [low, high] are {pct} bootstrap intervals over questions "
        f"({meta.resamples} resamples, seed {meta.seed}).",
    ]
    if meta.notes:
        out += ["", *(f"- {md_escape(note)}" for note in meta.notes)]
    for spec in TABLES:
        rows = report.table(spec.name)
        if not rows:
            continue
        out += ["", f"## {spec.title}", "", md_escape(spec.description), ""]
        out.append(markdown_table(spec, rows))
    return "\n".join(out) + "\n"
