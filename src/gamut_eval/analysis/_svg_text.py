"""What every plot shares: escaping, coordinates, scales, ticks, and text that fits.

SVG has no text layout, so labels are measured with a per-character width estimate of a
wide sans-serif (DejaVu Sans, the widest common default; narrower fonts only leave more
room) and wrapped onto lines at ``/``, ``-``, ``_``, spaces and punctuation, or split
when a word is longer than a line: a label is never cut and never runs past its space.
The full text stays in a ``<title>`` tooltip. Every string is escaped with
``html.escape`` in text nodes and attributes alike (it comes from a run's files).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "LINE",
    "OKABE_ITO",
    "Scale",
    "e",
    "f",
    "finite",
    "lines_text",
    "nice_ticks",
    "open_svg",
    "text_width",
    "wrap",
    "x_axis",
]

OKABE_ITO = {
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "grey": "#999999",
}
"""The Okabe-Ito palette, distinguishable with every common colour-vision deficiency."""
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
    parts = [
        f'<line class="axis" x1="{f(scale(ticks[0]))}" y1="{f(y)}" '
        f'x2="{f(scale(ticks[-1]))}" y2="{f(y)}"/>'
    ]
    for tick in ticks:
        x = scale(tick)
        parts.append(f'<line class="grid" x1="{f(x)}" y1="{f(top)}" x2="{f(x)}" y2="{f(y)}"/>')
        parts.append(
            f'<text class="tick" x="{f(x)}" y="{f(y + gap)}" text-anchor="middle">'
            f"{e(f'{tick:g}')}</text>"
        )
    middle = (scale(ticks[0]) + scale(ticks[-1])) / 2
    parts.append(
        f'<text class="caption" x="{f(middle)}" y="{f(y + gap + 18)}" '
        f'text-anchor="middle">{e(caption)}</text>'
    )
    return "".join(parts)
