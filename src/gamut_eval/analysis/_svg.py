"""Plots as inline SVG strings: interval charts, stacked verdict bars, scatter plots,
heatmaps and legends.

Written by hand (no plotting library in the core install) and kept plain: each function
returns one ``<svg>`` element sized by its viewBox, styled by the report's stylesheet
through class names (no inline ``style`` attributes, so a strict Content-Security-Policy
can forbid them) and fixed colours in presentation attributes. Every chart has a title,
axis captions, a legend, an accessible name (``aria-label`` and ``<title>``) and a
``<desc>`` that lists its values as text; the page puts the same numbers in a table beside
it. Colours are from the Okabe-Ito palette.

What every plot shares comes first: escaping, coordinates, scales, ticks, and text that
fits. SVG has no text layout, so labels are measured with a per-character width estimate
of a wide sans-serif (DejaVu Sans, the widest common default; narrower fonts only leave
more room) and wrapped onto lines at ``/``, ``-``, ``_``, spaces and punctuation, or split
when a word is longer than a line: a label is never cut and never runs past its space.
The full text stays in a ``<title>`` tooltip. Every string is escaped with
``html.escape`` in text nodes and attributes alike (it comes from a run's files).

Scatter labels sit in a column beside the plot, each joined to its point by a thin line
and pushed apart so no two overlap, however close the points are; heatmap headers wrap to
their cell's width; the heatmap's colour scale has its own legend.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from gamut_eval.scoring import Verdict

LINE = 1.25
"""Line height as a multiple of the font size."""

_NARROW = set("ijlft.,:;'|!()[]{} ")
_WIDE = set("mwMW@%")


def text_width(text: str, size: float, bold: bool = False) -> float:
    """Estimated rendered width in pixels (generous: DejaVu Sans proportions)."""
    total = 0.0
    for char in text:
        if char in _NARROW:
            total += 0.36
        elif char in _WIDE:
            total += 0.95
        elif char.isupper() or char in "<>=&#+~^":
            total += 0.78
        else:
            total += 0.64
    return total * size * (1.08 if bold else 1.0)


_BREAK = re.compile(r"(?<=[/\-_ ,:;|.])")


def _split_long(word: str, width: float, size: float, bold: bool) -> list[str]:
    parts, current = [], ""
    for char in word:
        if current and text_width(current + char, size, bold) > width:
            parts.append(current)
            current = char
        else:
            current += char
    return [*parts, current] if current else parts


def wrap(text: str, width: float, size: float, bold: bool = False) -> list[str]:
    """``text`` on as many lines as it needs, each at most ``width`` pixels wide."""
    pieces = [p for p in _BREAK.split(text) if p]
    lines: list[str] = []
    current = ""
    for piece in pieces:
        if text_width(current + piece, size, bold) <= width:
            current += piece
            continue
        if current:
            lines.append(current.rstrip())
        current = ""
        if text_width(piece, size, bold) > width:
            *whole, current = _split_long(piece, width, size, bold)
            lines += whole
        else:
            current = piece.lstrip()
    if current or not lines:
        lines.append(current.rstrip())
    return lines


def e(text: object) -> str:
    return escape(str(text), quote=True)


def f(value: float) -> str:
    """A coordinate: short, and never ``nan`` in the markup."""
    return f"{value:.1f}" if math.isfinite(value) else "0"


def lines_text(
    x: float,
    y: float,
    lines: Sequence[str],
    size: float,
    cls: str,
    anchor: str = "end",
    tip: str | None = None,
) -> str:
    """One ``<text>`` whose first baseline is at ``y``, a ``<tspan>`` per line."""
    spans = "".join(
        f'<tspan x="{f(x)}" dy="{f(0 if i == 0 else size * LINE)}">{e(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    title = f"<title>{e(tip)}</title>" if tip else ""
    return f'<text class="{cls}" x="{f(x)}" y="{f(y)}" text-anchor="{anchor}">{title}{spans}</text>'


def _line(cls: str, x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line class="{cls}" x1="{f(x1)}" y1="{f(y1)}" x2="{f(x2)}" y2="{f(y2)}"/>'


def _text(cls: str, x: float, y: float, anchor: str, content: object) -> str:
    """One ``<text>`` of one line, escaped."""
    return f'<text class="{cls}" x="{f(x)}" y="{f(y)}" text-anchor="{anchor}">{e(content)}</text>'


def open_svg(kind: str, width: float, height: float, title: list[str], desc: str) -> str:
    """The ``<svg>`` element with its accessible name and description, and its title (at
    13px bold, one ``ptitle`` line per entry of ``title``)."""
    name = " ".join(title)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-plot="{e(kind)}" '
        f'role="img" aria-label="{e(name)}" viewBox="0 0 {f(width)} {f(height)}" '
        f'width="{f(width)}" height="{f(height)}"><title>{e(name)}</title>'
        f"<desc>{e(desc)}</desc>"
        f'<rect class="bg" x="0" y="0" width="{f(width)}" height="{f(height)}"/>'
        + lines_text(8, 20, title, 13, "ptitle", anchor="start")
    )


def title_height(title: list[str]) -> float:
    return 8 + 13 * LINE * len(title)


@dataclass(frozen=True)
class Scale:
    """A linear map from data values to pixels."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.high - self.low or 1.0
        return self.start + (value - self.low) / span * (self.end - self.start)


def finite(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2 or 5 times a power of ten apart)."""
    if not high > low:
        low, high = low - 1, high + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def x_axis(
    ticks: Sequence[float], scale: Scale, y: float, top: float, caption: str, gap: float = 14
) -> str:
    """Axis line, grid, tick labels at ``y + gap`` and the caption at ``y + gap + 18``."""
    parts = [_line("axis", scale(ticks[0]), y, scale(ticks[-1]), y)]
    for tick in ticks:
        x = scale(tick)
        parts.append(_line("grid", x, top, x, y))
        parts.append(_text("tick", x, y + gap, "middle", f"{tick:g}"))
    middle = (scale(ticks[0]) + scale(ticks[-1])) / 2
    parts.append(_text("caption", middle, y + gap + 18, "middle", caption))
    return "".join(parts)


_KEY_SIZE = 11
_KEY_ROW = 16


@dataclass(frozen=True)
class Point:
    """One labelled point of a scatter chart."""

    label: str
    x: float
    y: float


def _swatch(kind: str, x: float, y: float) -> str:
    if kind == "dot":
        return f'<circle class="dot" cx="{f(x + 6)}" cy="{f(y - 4)}" r="4.5"/>'
    if kind in ("whisker", "diagonal"):
        return _line(kind, x, y - 4, x + 12, y - 4)
    if kind == "bar":
        return f'<rect class="bar" x="{f(x)}" y="{f(y - 10)}" width="12" height="12"/>'
    return f'<rect x="{f(x)}" y="{f(y - 10)}" width="12" height="12" fill="{e(kind)}"/>'


def legend(items: Sequence[tuple[str, str]], x: float, y: float, width: float) -> tuple[str, float]:
    """A key of (swatch, label) items from ``(x, y)`` (first baseline), wrapped into rows
    of at most ``width`` pixels; returns the markup and the height it takes. A swatch is
    ``dot``, ``whisker``, ``bar``, ``diagonal`` or a fill colour."""
    parts, cx, row = ['<g class="legend">'], x, 0
    for kind, label in items:
        size = 16 + text_width(label, _KEY_SIZE) + 14
        if cx > x and cx + size > x + width:
            cx, row = x, row + 1
        base = y + row * _KEY_ROW
        parts.append(_swatch(kind, cx, base))
        parts.append(_text("tick", cx + 16, base, "start", label))
        cx += size
    parts.append("</g>")
    return "".join(parts), (row + 1) * _KEY_ROW + 6


def _spread(wanted: list[float], heights: list[float], low: float) -> list[float]:
    """Tops for label blocks as near their wanted tops as possible, never overlapping and
    none above ``low`` (the blocks are in ``wanted`` order)."""
    tops, floor = [], low
    for want, height in zip(wanted, heights, strict=True):
        top = max(want, floor)
        tops.append(top)
        floor = top + height + 2
    return tops


def scatter_chart(points: Sequence[Point], title: str, x_label: str, y_label: str) -> str:
    """Points with the diagonal y = x: off-diagonal means the two axes disagree."""
    values = finite([v for p in points for v in (p.x, p.y)]) or [0.0]
    ticks = nice_ticks(min(values), max(values))
    size, left = 330.0, 64.0
    column = left + size + 26
    label_lines = [wrap(p.label, 150, 10) for p in points]
    label_w = max([text_width(line, 10) for group in label_lines for line in group] or [40])
    width = column + label_w + 12
    heading = wrap(title, width - 16, 13, bold=True)
    top = title_height(heading) + 10
    sx = Scale(ticks[0], ticks[-1], left, left + size)
    sy = Scale(ticks[0], ticks[-1], top + size, top)
    order = sorted(range(len(points)), key=lambda i: -points[i].y)
    heights = [10 * LINE * len(label_lines[i]) for i in order]
    tops = _spread([sy(points[i].y) - 6 for i in order], heights, top)
    plot_bottom = top + size
    labels_bottom = max([t + h for t, h in zip(tops, heights, strict=True)] or [plot_bottom])
    key_y = max(plot_bottom + 58, labels_bottom + 16)
    key, key_height = legend([("dot", "a model"), ("diagonal", "y = x: the two agree")],
                             left, key_y, width - left - 8)  # fmt: skip
    desc = "; ".join(f"{p.label}: {p.x:.1f} vs {p.y:.1f}" for p in points)
    parts = [open_svg("scatter", width, key_y + key_height, heading,
                      f"{x_label} against {y_label}. {desc}")]  # fmt: skip
    parts.append(x_axis(ticks, sx, plot_bottom, top, x_label, gap=19))
    for tick in ticks:
        parts.append(_line("grid", left, sy(tick), left + size, sy(tick)))
        parts.append(_text("tick", left - 6, sy(tick) + 3.5, "end", f"{tick:g}"))
    middle = top + size / 2
    parts.append(
        f'<text class="caption" x="14" y="{f(middle)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {f(middle)})">{e(y_label)}</text>'
    )
    parts.append(_line("diagonal", sx(ticks[0]), sy(ticks[0]), sx(ticks[-1]), sy(ticks[-1])))
    for i, label_top in zip(order, tops, strict=True):
        point, lines = points[i], label_lines[i]
        cx, cy = sx(point.x), sy(point.y)
        mid = label_top + 10 * LINE * len(lines) / 2
        parts.append(_line("leader", cx + 5, cy, column - 3, mid))
        parts.append(
            f'<circle class="dot" cx="{f(cx)}" cy="{f(cy)}" r="4.5"><title>'
            f"{e(point.label)}: {point.x:.1f} vs {point.y:.1f}</title></circle>"
        )
        parts.append(lines_text(column, label_top + 9, lines, 10, "plabel", "start", point.label))
    parts += [key, "</svg>"]
    return "".join(parts)


_RAMP = ((247, 251, 255), (198, 219, 239), (107, 174, 214), (33, 113, 181), (8, 48, 107))
"""A single-hue blue ramp: ordered by lightness, so it reads without colour vision too."""


def _colour(t: float) -> tuple[str, bool]:
    """Fill for a value scaled to [0, 1] (light to dark blue), and whether it is dark."""
    t = min(max(t, 0.0), 1.0) * (len(_RAMP) - 1)
    i = min(int(t), len(_RAMP) - 2)
    frac = t - i
    rgb = [round(a + (b - a) * frac) for a, b in zip(_RAMP[i], _RAMP[i + 1], strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb), t > 2.2


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    title: str,
    column_caption: str = "",
) -> str:
    """A cell per (row, column) coloured by value (display scale), value written in it."""
    present = finite([v for line in values for v in line]) or [0.0]
    low, high = min(present), max(present)
    cell_w, cell_h = 78.0, 24.0
    row_lines = [wrap(r, 190, 12) for r in rows]
    label_w = max([text_width(line, 12) for group in row_lines for line in group] or [40])
    left = max(label_w + 18, 70.0)
    width = max(left + cell_w * max(len(columns), 1) + 20, 400.0)
    heading = wrap(title, width - 16, 13, bold=True)
    head_lines = [wrap(c, cell_w - 8, 11) for c in columns]
    head_h = 11 * LINE * max([len(h) for h in head_lines] or [1])
    top = title_height(heading) + 22 + head_h + 6
    heights = [max(cell_h, 12 * LINE * len(g) + 6) for g in row_lines]
    bottom = top + sum(heights)
    stops = [low + (high - low) * k / 4 for k in range(5)]
    note = wrap("colour: Gamut score x100 (light low, dark high)", width - 16, 11)
    key_y = bottom + 34 + 11 * LINE * (len(note) - 1)
    key, key_height = legend([(_colour(k / 4)[0], f"{v:.1f}") for k, v in enumerate(stops)],
                             8, key_y, width - 16)  # fmt: skip
    desc = "; ".join(
        f"{r}: "
        + ", ".join(
            f"{c} {'none' if v is None else f'{v:.1f}'}"
            for c, v in zip(columns, values[i], strict=True)
        )
        for i, r in enumerate(rows)
    )
    parts = [open_svg("heatmap", width, key_y + key_height, heading, desc)]
    caption_y = title_height(heading) + 16
    parts.append(_text("caption", left, caption_y, "start", column_caption or "group"))
    parts.append(_text("caption", left - 8, top - 8, "end", "model"))
    for c, lines in enumerate(head_lines):
        x = left + cell_w * c + cell_w / 2 - 1
        parts.append(lines_text(x, caption_y + 16, lines, 11, "tick", "middle", columns[c]))
    y = top
    for r, row in enumerate(rows):
        first = y + heights[r] / 2 + 4 - (len(row_lines[r]) - 1) * 12 * LINE / 2
        parts.append(lines_text(left - 8, first, row_lines[r], 12, "label", "end", row))
        for c, value in enumerate(values[r]):
            parts.append(_cell(left + cell_w * c, y, cell_w, heights[r], value, (low, high)))
        y += heights[r]
    parts.append(lines_text(8, bottom + 18, note, 11, "caption", "start"))
    parts += [key, "</svg>"]
    return "".join(parts)


def _cell(
    x: float, y: float, w: float, h: float, value: float | None, span: tuple[float, float]
) -> str:
    if value is None:
        fill, dark, content = "#e5e5e5", False, "—"
    else:
        low, high = span
        fill, dark = _colour((value - low) / (high - low) if high > low else 0.5)
        content = f"{value:.1f}"
    cls = "cell dark" if dark else "cell"
    return (
        f'<rect x="{f(x)}" y="{f(y)}" width="{f(w - 2)}" height="{f(h - 2)}" fill="{fill}"/>'
        + _text(cls, x + w / 2 - 1, y + h / 2 + 3, "middle", content)
    )


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
    parts = [_text("caption", rows.left - 8, top - 8, "end", caption)]
    for group, centre, full in zip(rows.lines, rows.centres, labels, strict=True):
        first = centre + 4 - (len(group) - 1) * _LABEL_SIZE * LINE / 2
        parts.append(lines_text(rows.left - 8, first, group, _LABEL_SIZE, "label", tip=full))
    return "".join(parts)


def _frame(title: str, labels: Sequence[str]) -> tuple[list[str], float, _Rows, float]:
    """Title lines, the plot's top, the wrapped row labels and the SVG's width."""
    probe = _rows(labels, 0)
    width = probe.left + _PLOT + 30
    lines = wrap(title, width - 16, 13, bold=True)
    top = title_height(lines) + 26
    return lines, top, _rows(labels, top), width


def interval_chart(
    rows: Sequence[Interval],
    title: str,
    caption: str,
    kind: str = "scores",
    bars: bool = False,
    rows_caption: str = "model",
) -> str:
    """A dot (or a bar from zero) per row with a whisker for its interval; the rows are
    headed ``rows_caption``."""
    values = finite([v for r in rows for v in (r.value, r.low, r.high)]) or [0.0]
    ticks = nice_ticks(min(0.0, *values), max(0.0, *values))
    labels = [r.label for r in rows]
    heading, top, layout, width = _frame(title, labels)
    scale = Scale(ticks[0], ticks[-1], layout.left, layout.left + _PLOT)
    bottom = layout.bottom
    items = [("bar", "the value") if bars else ("dot", "the value"), ("whisker", "its interval")]
    key, key_height = legend(items, layout.left, bottom + 52, width - layout.left - 8)
    desc = "; ".join(f"{r.label}: {_value_text(r)}" for r in rows)
    parts = [open_svg(kind, width, bottom + 52 + key_height, heading, f"{caption}. {desc}")]
    parts.append(x_axis(ticks, scale, bottom, top, caption))
    parts.append(_line("zero", scale(0), top, scale(0), bottom))
    parts.append(_row_labels(layout, labels, rows_caption, top))
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
        parts.append(_line("whisker", x1, y, x2, y))
        for x in (x1, x2):
            parts.append(_line("whisker", x, y - 5, x, y + 5))
    if row.value is not None:
        parts.append(
            f'<circle class="dot" cx="{f(scale(row.value))}" cy="{f(y)}" r="4.5">'
            f"<title>{e(row.label)}: {e(_value_text(row))}</title></circle>"
        )
    return "".join(parts)


def stacked_bars(rows: Sequence[Bar], categories: Sequence[tuple[str, str]], title: str) -> str:
    """100% horizontal bars; ``categories`` are (name, fill colour) in stacking order."""
    labels = [r.label for r in rows]
    heading, top, layout, width = _frame(title, labels)
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
    (Verdict.MEETS.words, "#009E73"),
    (Verdict.PARTIALLY_MEETS.words, "#56B4E9"),
    (Verdict.MISSING.words, "#CFCFCF"),
    (Verdict.CONTRADICTS.words, "#D55E00"),
)
"""Verdict colours: Okabe-Ito bluish green, sky blue and vermillion (distinguishable with
every common colour-vision deficiency), and a light grey."""
