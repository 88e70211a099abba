"""Tables that fit the terminal without cutting a model's or a judge's name.

Rich shrinks a table that is wider than the console by wrapping its cells and, as a last
resort, by cutting them with an ellipsis. A cut model name is worse than no table, so a
table here is built by a function that writes every model or judge id through a ``name``
function, rendered once off screen at the console's width, and kept only if every id it
wrote appears whole. Otherwise it is built again with short names (the last part of each
id when those are distinct, else ``M1``, ``M2``, ...) and printed with a legend, one id
per line. Every column folds instead of cutting (``overflow="fold"``), so numbers and
headers may wrap but never lose characters.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = ["Namer", "fitted", "short_names"]

Namer = Callable[[str], str]
"""What a table builder calls to write a model or judge id into a cell."""


def short_names(names: Sequence[str]) -> list[dict[str, str]]:
    """Candidate short forms of ``names``, best first: the part after the last ``/``
    when those are distinct (and shorter), then ``M1``, ``M2``, ..."""
    unique = list(dict.fromkeys(names))
    candidates = []
    tails = {n: n.rsplit("/", 1)[-1] for n in unique}
    if len(set(tails.values())) == len(unique) and tails != {n: n for n in unique}:
        candidates.append(tails)
    candidates.append({n: f"M{i}" for i, n in enumerate(unique, start=1)})
    return candidates


def _render(renderable: RenderableType, width: int) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, legacy_windows=False).print(renderable)
    return buffer.getvalue()


def _whole(text: str, written: Counter[str]) -> bool:
    """Every name written appears whole (on one line) at least as often as it was written,
    and nothing was cut with an ellipsis."""
    if "…" in text:
        return False
    lines = text.splitlines()
    return all(sum(line.count(n) for line in lines) >= k for n, k in written.items())


def _legend(names: dict[str, str]) -> RenderableType:
    from rich.text import Text

    width = max(len(short) for short in names.values())
    lines = [f"  {short.ljust(width)}  {full}" for full, short in names.items() if short != full]
    return Text("\n".join(lines), no_wrap=True, overflow="ignore")


def fitted(build: Callable[[Namer], Table], console: Console) -> list[RenderableType]:
    """The table ``build`` makes, fitted to ``console``'s width: with full names if they
    all show whole, else with short names and a legend of what they stand for."""
    width = console.width
    written: Counter[str] = Counter()

    def full(name: str) -> str:
        written[name] += 1
        return name

    table = build(full)
    if not written or _whole(_render(table, width), written):
        return [table]
    names = list(written)
    for short in short_names(names):
        shown: Counter[str] = Counter()

        def namer(name: str, short: dict[str, str] = short, shown: Counter[str] = shown) -> str:
            shown[short[name]] += 1
            return short[name]

        table = build(namer)
        if _whole(_render(table, width), shown):
            break
    return [table, _legend(short)]
