"""Plots as inline SVG strings: interval charts, stacked bars, scatter, heatmap.

Written by hand (no plotting library in the core install) and kept plain: each function
returns one ``<svg>`` element sized by its viewBox, styled by the report's stylesheet
through class names (no inline ``style`` attributes, so a strict Content-Security-Policy
can forbid them) and fixed colours in presentation attributes.

Every piece of text comes from a run's files (model ids, judge ids, domains), so it is
untrusted: it goes through ``html.escape`` before it reaches the markup, in text nodes and
attributes alike, and long labels are shortened (the full text stays in a ``<title>``
tooltip, escaped too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "Bar",
    "Interval",
    "Point",
    "heatmap",
    "interval_chart",
    "nice_ticks",
    "scatter_chart",
    "stacked_bars",
]

_LABEL_CHARS = 26
_ROW = 22
_LEFT = 196
_PLOT = 330
_TOP = 34
_BOTTOM = 44


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
class Point:
    """One labelled point of a scatter chart."""

    label: str
    x: float
    y: float


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _short(text: str, limit: int = _LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _f(value: float) -> str:
    """A coordinate: short, and never ``nan`` in the markup."""
    return f"{value:.1f}" if math.isfinite(value) else "0"


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


def _open(kind: str, width: float, height: float, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-plot="{_e(kind)}" '
        f'role="img" aria-label="{_e(title)}" viewBox="0 0 {_f(width)} {_f(height)}" '
        f'width="{_f(width)}" height="{_f(height)}"><title>{_e(title)}</title>'
        f'<rect class="bg" x="0" y="0" width="{_f(width)}" height="{_f(height)}"/>'
        f'<text class="ptitle" x="8" y="20">{_e(title)}</text>'
    )


def _label(x: float, y: float, text: str, anchor: str = "end", cls: str = "label") -> str:
    short = _short(text)
    return (
        f'<text class="{cls}" x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}">'
        f"<title>{_e(text)}</title>{_e(short)}</text>"
    )


def _x_axis(ticks: Sequence[float], scale: _Scale, y: float, top: float, caption: str) -> str:
    parts = [
        f'<line class="axis" x1="{_f(scale(ticks[0]))}" y1="{_f(y)}" '
        f'x2="{_f(scale(ticks[-1]))}" y2="{_f(y)}"/>'
    ]
    for tick in ticks:
        x = scale(tick)
        parts.append(f'<line class="grid" x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(y)}"/>')
        parts.append(
            f'<text class="tick" x="{_f(x)}" y="{_f(y + 14)}" text-anchor="middle">'
            f"{_e(f'{tick:g}')}</text>"
        )
    middle = (scale(ticks[0]) + scale(ticks[-1])) / 2
    parts.append(
        f'<text class="caption" x="{_f(middle)}" y="{_f(y + 32)}" '
        f'text-anchor="middle">{_e(caption)}</text>'
    )
    return "".join(parts)


@dataclass(frozen=True)
class _Scale:
    """A linear map from data values to pixels."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.high - self.low or 1.0
        return self.start + (value - self.low) / span * (self.end - self.start)


def _finite(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def interval_chart(
    rows: Sequence[Interval], title: str, caption: str, kind: str = "scores", bars: bool = False
) -> str:
    """A dot (or a bar from zero) per row with a whisker for its interval."""
    values = _finite([v for r in rows for v in (r.value, r.low, r.high)]) or [0.0]
    ticks = nice_ticks(min(0.0, *values), max(0.0, *values))
    scale = _Scale(ticks[0], ticks[-1], _LEFT, _LEFT + _PLOT)
    height = _TOP + _ROW * max(len(rows), 1) + _BOTTOM
    bottom = height - _BOTTOM
    parts = [_open(kind, _LEFT + _PLOT + 30, height, title)]
    parts.append(_x_axis(ticks, scale, bottom, _TOP, caption))
    parts.append(
        f'<line class="zero" x1="{_f(scale(0))}" y1="{_TOP}" x2="{_f(scale(0))}" '
        f'y2="{_f(bottom)}"/>'
    )
    for i, row in enumerate(rows):
        y = _TOP + _ROW * i + _ROW / 2
        parts.append(_label(_LEFT - 8, y + 4, row.label))
        parts.append(_interval_marks(row, scale, y, bars))
    parts.append("</svg>")
    return "".join(parts)


def _interval_marks(row: Interval, scale: _Scale, y: float, bars: bool) -> str:
    parts = []
    if bars and row.value is not None:
        left, right = sorted((scale(0), scale(row.value)))
        parts.append(
            f'<rect class="bar" x="{_f(left)}" y="{_f(y - 7)}" '
            f'width="{_f(max(right - left, 1))}" height="14"/>'
        )
    if row.low is not None and row.high is not None:
        x1, x2 = scale(row.low), scale(row.high)
        parts.append(
            f'<line class="whisker" x1="{_f(x1)}" y1="{_f(y)}" x2="{_f(x2)}" y2="{_f(y)}"/>'
        )
        for x in (x1, x2):
            parts.append(
                f'<line class="whisker" x1="{_f(x)}" y1="{_f(y - 5)}" x2="{_f(x)}" '
                f'y2="{_f(y + 5)}"/>'
            )
    if row.value is not None:
        tip = f"{row.label}: {row.value:.1f}"
        if row.low is not None and row.high is not None:
            tip += f" [{row.low:.1f}, {row.high:.1f}]"
        parts.append(
            f'<circle class="dot" cx="{_f(scale(row.value))}" cy="{_f(y)}" r="4.5">'
            f"<title>{_e(tip)}</title></circle>"
        )
    return "".join(parts)


def stacked_bars(rows: Sequence[Bar], categories: Sequence[tuple[str, str]], title: str) -> str:
    """100% horizontal bars; ``categories`` are (name, fill colour) in stacking order."""
    height = _TOP + _ROW * max(len(rows), 1) + _BOTTOM
    scale = _Scale(0.0, 1.0, _LEFT, _LEFT + _PLOT)
    parts = [_open("verdicts", _LEFT + _PLOT + 30, height, title)]
    for i, row in enumerate(rows):
        y = _TOP + _ROW * i + 3
        parts.append(_label(_LEFT - 8, y + 12, row.label))
        start = 0.0
        for (name, colour), share in zip(categories, row.shares, strict=True):
            if share is None or not share > 0:
                continue
            x1, x2 = scale(start), scale(min(start + share, 1.0))
            parts.append(
                f'<rect x="{_f(x1)}" y="{_f(y)}" width="{_f(max(x2 - x1, 0.5))}" '
                f'height="{_ROW - 6}" fill="{_e(colour)}"><title>{_e(row.label)}: '
                f"{_e(name)} {100 * share:.1f}%</title></rect>"
            )
            start += share
    legend_y = height - _BOTTOM + 22
    x = float(_LEFT)
    for name, colour in categories:
        parts.append(
            f'<rect x="{_f(x)}" y="{_f(legend_y - 10)}" width="12" height="12" '
            f'fill="{_e(colour)}"/>'
        )
        parts.append(_label(x + 16, legend_y, name, anchor="start", cls="tick"))
        x += 22 + 6.2 * len(name)
    parts.append("</svg>")
    return "".join(parts)


def scatter_chart(points: Sequence[Point], title: str, x_label: str, y_label: str) -> str:
    """Points with the diagonal y = x: off-diagonal means the two axes disagree."""
    values = _finite([v for p in points for v in (p.x, p.y)]) or [0.0]
    ticks = nice_ticks(min(values), max(values))
    size, left, top = 330.0, 60.0, _TOP
    sx = _Scale(ticks[0], ticks[-1], left, left + size)
    sy = _Scale(ticks[0], ticks[-1], top + size, top)
    parts = [_open("scatter", left + size + 140, top + size + _BOTTOM, title)]
    parts.append(_x_axis(ticks, sx, top + size, top, x_label))
    for tick in ticks:
        parts.append(
            f'<line class="grid" x1="{_f(left)}" y1="{_f(sy(tick))}" '
            f'x2="{_f(left + size)}" y2="{_f(sy(tick))}"/>'
        )
        parts.append(_label(left - 6, sy(tick) + 4, f"{tick:g}", cls="tick"))
    parts.append(
        f'<text class="caption" x="14" y="{_f(top + size / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f(top + size / 2)})">{_e(y_label)}</text>'
    )
    parts.append(
        f'<line class="diagonal" x1="{_f(sx(ticks[0]))}" y1="{_f(sy(ticks[0]))}" '
        f'x2="{_f(sx(ticks[-1]))}" y2="{_f(sy(ticks[-1]))}"/>'
    )
    for point in points:
        cx, cy = sx(point.x), sy(point.y)
        tip = f"{point.label}: {point.x:.1f} vs {point.y:.1f}"
        parts.append(
            f'<circle class="dot" cx="{_f(cx)}" cy="{_f(cy)}" r="4.5">'
            f"<title>{_e(tip)}</title></circle>"
        )
        parts.append(_label(cx + 7, cy - 5, _short(point.label, 22), anchor="start", cls="plabel"))
    parts.append("</svg>")
    return "".join(parts)


_BLUES = ((247, 251, 255), (198, 219, 239), (107, 174, 214), (33, 113, 181), (8, 48, 107))


def _colour(t: float) -> tuple[str, bool]:
    """Fill for a value scaled to [0, 1] (light to dark blue), and whether it is dark."""
    t = min(max(t, 0.0), 1.0) * (len(_BLUES) - 1)
    i = min(int(t), len(_BLUES) - 2)
    frac = t - i
    rgb = [round(a + (b - a) * frac) for a, b in zip(_BLUES[i], _BLUES[i + 1], strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb), t > 2.2


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    title: str,
) -> str:
    """A cell per (row, column) coloured by value (display scale), value written in it."""
    finite = _finite([v for line in values for v in line]) or [0.0]
    low, high = min(finite), max(finite)
    cell_w, cell_h, top = 78.0, 24.0, _TOP + 40
    width = _LEFT + cell_w * max(len(columns), 1) + 20
    parts = [_open("heatmap", width, top + cell_h * max(len(rows), 1) + 16, title)]
    for c, column in enumerate(columns):
        x = _LEFT + cell_w * c + cell_w / 2
        parts.append(_label(x, top - 8, _short(column, 11), anchor="middle", cls="tick"))
    for r, row in enumerate(rows):
        y = top + cell_h * r
        parts.append(_label(_LEFT - 8, y + cell_h / 2 + 4, row))
        for c, value in enumerate(values[r]):
            parts.append(_cell(_LEFT + cell_w * c, y, cell_w, cell_h, value, (low, high)))
    parts.append("</svg>")
    return "".join(parts)


def _cell(
    x: float, y: float, w: float, h: float, value: float | None, span: tuple[float, float]
) -> str:
    if value is None or not math.isfinite(value):
        fill, dark, text = "#e5e5e5", False, "—"
    else:
        low, high = span
        fill, dark = _colour((value - low) / (high - low) if high > low else 0.5)
        text = f"{value:.1f}"
    cls = "cell dark" if dark else "cell"
    return (
        f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w - 2)}" height="{_f(h - 2)}" '
        f'fill="{fill}"/><text class="{cls}" x="{_f(x + w / 2 - 1)}" y="{_f(y + h / 2 + 3)}" '
        f'text-anchor="middle">{_e(text)}</text>'
    )
