"""Plots as inline SVG strings: interval charts and stacked verdict bars (scatter plots and
heatmaps are in ``_svg_grid``, re-exported here).

Written by hand (no plotting library in the core install) and kept plain: each function
returns one ``<svg>`` element sized by its viewBox, styled by the report's stylesheet
through class names (no inline ``style`` attributes, so a strict Content-Security-Policy
can forbid them) and fixed colours in presentation attributes. Every chart has a title,
axis captions, a legend, an accessible name (``aria-label`` and ``<title>``) and a
``<desc>`` that lists its values as text; the page puts the same numbers in a table beside
it. Colours are from the Okabe-Ito palette. Labels wrap instead of being cut (``_svg_text``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gamut_eval.analysis._svg_grid import Point, heatmap, legend, scatter_chart
from gamut_eval.analysis._svg_text import (
    LINE,
    OKABE_ITO,
    Scale,
    e,
    f,
    finite,
    lines_text,
    nice_ticks,
    open_svg,
    text_width,
    title_height,
    wrap,
    x_axis,
)

__all__ = [
    "VERDICT_PALETTE",
    "Bar",
    "Interval",
    "Point",
    "heatmap",
    "interval_chart",
    "nice_ticks",
    "scatter_chart",
    "stacked_bars",
]

_ROW = 22
_PLOT = 330
_LABEL_SIZE = 12
_LABEL_MAX = 190.0


@dataclass(frozen=True)
class Interval:
    """One row of an interval chart, on the display scale (scores x100)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Bar:
    """One stacked bar: a share per category (summing to at most 1)."""

    label: str
    shares: Sequence[float | None]


@dataclass(frozen=True)
class _Rows:
    """Row labels wrapped to the label column; each row's centre line."""

    lines: list[list[str]]
    centres: list[float]
    left: float
    bottom: float


def _rows(labels: Sequence[str], top: float) -> _Rows:
    lines = [wrap(label, _LABEL_MAX, _LABEL_SIZE) for label in labels]
    width = max([text_width(line, _LABEL_SIZE) for group in lines for line in group] or [40])
    centres, y = [], top
    for group in lines:
        height = max(_ROW, _LABEL_SIZE * LINE * len(group) + 6)
        centres.append(y + height / 2)
        y += height
    return _Rows(lines, centres, max(width + 18, 70.0), y if labels else top + _ROW)


def _row_labels(rows: _Rows, labels: Sequence[str], caption: str, top: float) -> str:
    parts = [
        f'<text class="caption" x="{f(rows.left - 8)}" y="{f(top - 8)}" '
        f'text-anchor="end">{e(caption)}</text>'
    ]
    for group, centre, full in zip(rows.lines, rows.centres, labels, strict=True):
        first = centre + 4 - (len(group) - 1) * _LABEL_SIZE * LINE / 2
        parts.append(lines_text(rows.left - 8, first, group, _LABEL_SIZE, "label", tip=full))
    return "".join(parts)


def _frame(kind: str, title: str, labels: Sequence[str]) -> tuple[list[str], float, _Rows, float]:
    """Title lines, the plot's top, the wrapped row labels and the SVG's width."""
    probe = _rows(labels, 0)
    width = probe.left + _PLOT + 30
    lines = wrap(title, width - 16, 13, bold=True)
    top = title_height(lines) + 26
    return lines, top, _rows(labels, top), width


def interval_chart(
    rows: Sequence[Interval], title: str, caption: str, kind: str = "scores", bars: bool = False
) -> str:
    """A dot (or a bar from zero) per row with a whisker for its interval."""
    values = finite([v for r in rows for v in (r.value, r.low, r.high)]) or [0.0]
    ticks = nice_ticks(min(0.0, *values), max(0.0, *values))
    labels = [r.label for r in rows]
    heading, top, layout, width = _frame(kind, title, labels)
    scale = Scale(ticks[0], ticks[-1], layout.left, layout.left + _PLOT)
    bottom = layout.bottom
    items = [("bar", "the value") if bars else ("dot", "the value"), ("whisker", "its interval")]
    key, key_height = legend(items, layout.left, bottom + 52, width - layout.left - 8)
    desc = "; ".join(f"{r.label}: {_value_text(r)}" for r in rows)
    parts = [open_svg(kind, width, bottom + 52 + key_height, heading, f"{caption}. {desc}")]
    parts.append(x_axis(ticks, scale, bottom, top, caption))
    parts.append(
        f'<line class="zero" x1="{f(scale(0))}" y1="{f(top)}" x2="{f(scale(0))}" y2="{f(bottom)}"/>'
    )
    parts.append(_row_labels(layout, labels, "model", top))
    for row, y in zip(rows, layout.centres, strict=True):
        parts.append(_interval_marks(row, scale, y, bars))
    parts += [key, "</svg>"]
    return "".join(parts)


def _value_text(row: Interval) -> str:
    if row.value is None:
        return "no value"
    text = f"{row.value:.1f}"
    if row.low is not None and row.high is not None:
        text += f" [{row.low:.1f}, {row.high:.1f}]"
    return text


def _interval_marks(row: Interval, scale: Scale, y: float, bars: bool) -> str:
    parts = []
    if bars and row.value is not None:
        left, right = sorted((scale(0), scale(row.value)))
        parts.append(
            f'<rect class="bar" x="{f(left)}" y="{f(y - 7)}" '
            f'width="{f(max(right - left, 1))}" height="14"/>'
        )
    if row.low is not None and row.high is not None:
        x1, x2 = scale(row.low), scale(row.high)
        parts.append(f'<line class="whisker" x1="{f(x1)}" y1="{f(y)}" x2="{f(x2)}" y2="{f(y)}"/>')
        for x in (x1, x2):
            parts.append(
                f'<line class="whisker" x1="{f(x)}" y1="{f(y - 5)}" x2="{f(x)}" y2="{f(y + 5)}"/>'
            )
    if row.value is not None:
        parts.append(
            f'<circle class="dot" cx="{f(scale(row.value))}" cy="{f(y)}" r="4.5">'
            f"<title>{e(row.label)}: {e(_value_text(row))}</title></circle>"
        )
    return "".join(parts)


def stacked_bars(rows: Sequence[Bar], categories: Sequence[tuple[str, str]], title: str) -> str:
    """100% horizontal bars; ``categories`` are (name, fill colour) in stacking order."""
    labels = [r.label for r in rows]
    heading, top, layout, width = _frame("verdicts", title, labels)
    scale = Scale(0.0, 100.0, layout.left, layout.left + _PLOT)
    bottom = layout.bottom
    caption = "share of scored checks (%)"
    key, key_height = legend(
        [(colour, name) for name, colour in categories], layout.left, bottom + 52,
        width - layout.left - 8,
    )  # fmt: skip
    desc = "; ".join(
        f"{r.label}: "
        + ", ".join(
            f"{n} {100 * s:.1f}%"
            for (n, _), s in zip(categories, r.shares, strict=True)
            if s is not None
        )
        for r in rows
    )
    parts = [open_svg("verdicts", width, bottom + 52 + key_height, heading, f"{caption}. {desc}")]
    parts.append(x_axis([0, 25, 50, 75, 100], scale, bottom, top, caption))
    parts.append(_row_labels(layout, labels, "model", top))
    for row, centre in zip(rows, layout.centres, strict=True):
        start = 0.0
        for (name, colour), share in zip(categories, row.shares, strict=True):
            if share is None or not share > 0:
                continue
            x1, x2 = scale(100 * start), scale(100 * min(start + share, 1.0))
            parts.append(
                f'<rect x="{f(x1)}" y="{f(centre - 8)}" width="{f(max(x2 - x1, 0.5))}" '
                f'height="16" fill="{e(colour)}"><title>{e(row.label)}: '
                f"{e(name)} {100 * share:.1f}%</title></rect>"
            )
            start += share
    parts += [key, "</svg>"]
    return "".join(parts)


VERDICT_PALETTE: tuple[tuple[str, str], ...] = (
    ("meets", OKABE_ITO["bluish green"]),
    ("partially meets", OKABE_ITO["sky blue"]),
    ("missing", "#CFCFCF"),
    ("contradicts", OKABE_ITO["vermillion"]),
)
"""Verdict colours: Okabe-Ito bluish green, sky blue and vermillion, and a light grey."""
