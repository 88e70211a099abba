"""Tables that fit the terminal without cutting a model's or a judge's name.

Rich shrinks a table that is wider than the console by wrapping its cells and, as a last
resort, by cutting them. A cut model name is worse than no table, so a table here is made
by a builder that writes every model or judge id through a ``name`` function and makes
narrower variants on request (``level`` 1: shorter headers, one space between columns;
2: also without secondary columns, which its caption names). Candidates are tried in
order: full names, then short names (the part after the last ``/`` when those are
distinct, else ``M1``, ``M2``, ...), each at level 0, 1 and 2. Each is rendered off
screen without a width limit, and the first no wider than the console is printed (rich
then has nothing to wrap or cut); with short names, a legend follows, one id per line.
If none fits (a terminal narrower than about 50 columns), the table is printed as
records instead: each row's first cell, then one ``header: value`` line per cell, full
names included.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = ["LEVELS", "Builder", "Namer", "fitted", "print_fitted", "short_names"]

Namer = Callable[[str], str]
"""What a table builder calls to write a model or judge id into a cell."""
Builder = Callable[[Namer, int], "Table"]
"""Makes the table from a namer and a level (0: wide, 1: compact, 2: narrowest)."""
LEVELS = (0, 1, 2)


def short_names(names: Sequence[str]) -> list[dict[str, str]]:
    """Short forms of ``names``, best first: the part after the last ``/`` when those are
    distinct and differ from the names, then ``M1``, ``M2``, ..."""
    unique = list(dict.fromkeys(names))
    candidates = []
    tails = {n: n.rsplit("/", 1)[-1] for n in unique}
    if len(set(tails.values())) == len(unique) and tails != {n: n for n in unique}:
        candidates.append(tails)
    candidates.append({n: f"M{i}" for i, n in enumerate(unique, start=1)})
    return candidates


def _natural_width(table: Table) -> int:
    """The width the table takes when nothing constrains it (its title and caption, which
    are sentences and may wrap, left out): it fits a console at least this wide whole."""
    from rich.cells import cell_len
    from rich.console import Console

    title, caption = table.title, table.caption
    table.title = table.caption = None
    try:
        buffer = io.StringIO()
        console = Console(file=buffer, width=10_000, color_system=None, legacy_windows=False)
        console.print(table)
    finally:
        table.title, table.caption = title, caption
    return max((cell_len(line) for line in buffer.getvalue().splitlines()), default=0)


def _records(table: Table) -> list[RenderableType]:
    """The last resort on a console too narrow for any candidate: the table as records,
    one line per cell (``header: value``) under its row's first cell, so that nothing is
    cut and every name stays whole (a line longer than the console is left to it)."""
    from rich.console import Group
    from rich.text import Text

    columns = list(table.columns)
    cells = [list(column.cells) for column in columns]
    lines: list[RenderableType] = []
    if table.title:
        lines.append(Text.from_markup(str(table.title), style="bold"))
    for i in range(len(cells[0]) if cells else 0):
        first = Text.from_markup(str(cells[0][i]), overflow="ignore")
        first.no_wrap = True
        lines.append(first)
        for column, values in zip(columns[1:], cells[1:], strict=True):
            text = Text.from_markup(f"  {column.header}: ")
            text.append_text(Text.from_markup(str(values[i])))
            text.no_wrap, text.overflow = True, "ignore"
            lines.append(text)
    out: list[RenderableType] = [Group(*lines)]
    if table.caption:
        out.append(Text.from_markup(str(table.caption)))  # a sentence: wraps as usual
    return out


def _legend(names: dict[str, str]) -> RenderableType:
    from rich.text import Text

    width = max(len(short) for short in names.values())
    lines = [f"  {short.ljust(width)}  {full}" for full, short in names.items()]
    return Text("\n".join(lines), no_wrap=True, overflow="ignore")


def print_fitted(console: Console, parts: Sequence[RenderableType]) -> None:
    """Print what ``fitted`` returned: tables as tables, a legend or records with soft
    wrapping (never cropped: a line longer than the console is folded by the terminal,
    and the name in it stays whole), a caption as a wrapped sentence."""
    from rich.console import Group
    from rich.text import Text

    for part in parts:
        whole = isinstance(part, Group) or (isinstance(part, Text) and part.no_wrap)
        console.print(part, soft_wrap=bool(whole))


def fitted(build: Builder, console: Console) -> list[RenderableType]:
    """The table ``build`` makes, fitted to ``console``'s width (see the module): a list
    of the table and, when it shows short names, their legend."""
    width = console.width
    written: list[str] = []

    def full(name: str) -> str:
        written.append(name)
        return name

    table = build(full, 0)
    if _natural_width(table) <= width:
        return [table]
    candidates: list[dict[str, str] | None] = [None, *short_names(written)] if written else [None]
    tried = [(names, level) for names in candidates for level in LEVELS][1:]
    for names, level in tried:
        namer: Namer = (lambda n: n) if names is None else names.__getitem__
        table = build(namer, level)
        if _natural_width(table) <= width:
            break
    else:
        return _records(build(full, 0))
    return [table] if names is None else [table, _legend(names)]
