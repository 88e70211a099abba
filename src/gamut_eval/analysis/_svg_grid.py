"""Scatter plots, heatmaps and legends as inline SVG (see ``_svg`` for the conventions).

Scatter labels sit in a column beside the plot, each joined to its point by a thin line and
pushed apart so no two overlap, however close the points are; heatmap headers wrap to
their cell's width; the heatmap's colour scale has its own legend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gamut_eval.analysis._svg_text import (
    LINE,
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

__all__ = ["Point", "heatmap", "legend", "scatter_chart"]

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
        return (
            f'<line class="{kind}" x1="{f(x)}" y1="{f(y - 4)}" x2="{f(x + 12)}" y2="{f(y - 4)}"/>'
        )
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
        parts.append(
            f'<text class="tick" x="{f(cx + 16)}" y="{f(base)}" text-anchor="start">'
            f"{e(label)}</text>"
        )
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
        parts.append(
            f'<line class="grid" x1="{f(left)}" y1="{f(sy(tick))}" '
            f'x2="{f(left + size)}" y2="{f(sy(tick))}"/>'
        )
        parts.append(
            f'<text class="tick" x="{f(left - 6)}" y="{f(sy(tick) + 3.5)}" text-anchor="end">'
            f"{e(f'{tick:g}')}</text>"
        )
    middle = top + size / 2
    parts.append(
        f'<text class="caption" x="14" y="{f(middle)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {f(middle)})">{e(y_label)}</text>'
    )
    parts.append(
        f'<line class="diagonal" x1="{f(sx(ticks[0]))}" y1="{f(sy(ticks[0]))}" '
        f'x2="{f(sx(ticks[-1]))}" y2="{f(sy(ticks[-1]))}"/>'
    )
    for i, label_top in zip(order, tops, strict=True):
        point, lines = points[i], label_lines[i]
        cx, cy = sx(point.x), sy(point.y)
        mid = label_top + 10 * LINE * len(lines) / 2
        parts.append(
            f'<line class="leader" x1="{f(cx + 5)}" y1="{f(cy)}" x2="{f(column - 3)}" '
            f'y2="{f(mid)}"/>'
        )
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
    parts.append(
        f'<text class="caption" x="{f(left)}" y="{f(caption_y)}" text-anchor="start">'
        f"{e(column_caption or 'group')}</text>"
    )
    parts.append(
        f'<text class="caption" x="{f(left - 8)}" y="{f(top - 8)}" text-anchor="end">model</text>'
    )
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
        fill, dark, text = "#e5e5e5", False, "—"
    else:
        low, high = span
        fill, dark = _colour((value - low) / (high - low) if high > low else 0.5)
        text = f"{value:.1f}"
    cls = "cell dark" if dark else "cell"
    return (
        f'<rect x="{f(x)}" y="{f(y)}" width="{f(w - 2)}" height="{f(h - 2)}" '
        f'fill="{fill}"/><text class="{cls}" x="{f(x + w / 2 - 1)}" y="{f(y + h / 2 + 3)}" '
        f'text-anchor="middle">{e(text)}</text>'
    )
