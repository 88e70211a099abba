"""The terminal: how the command line shows a judge pass, and tables that fit its width.

Progress (``PassProgress``): one renderer for every command's events.

Every pass reports ``PassEvent``s (start, progress, note, done). On a terminal they drive a
rich progress line per judge (done/total, unscored, time left, checks/s, a bar, cached,
elapsed); the columns that do not fit the terminal's width are left out, least useful
first (``progress_columns``), and a long label gives way to the judge's name, so the line
is never cut. Without a terminal (CI, a log file) a plain line is printed every
``LINE_EVERY_S`` seconds and at the end, each on one line however long, so a long run is
never silent. A long wait the judge's server asked for (``JudgeStats.waiting_until``) is
shown at once, as a line of its own above the progress line (how long, until when, the
server's words), and the line's rate reads ``waiting`` while it lasts. Updates are
throttled so the display costs nothing at 2,000 checks/s.

Tables (``fitted``, ``print_fitted``): a model's or a judge's name is never cut (below).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gamut_eval.cli._common import err_console, rich_console

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from gamut_eval.judge import JudgeStats, PassEvent

REFRESH_S = 0.1
LINE_EVERY_S = 10.0


def _rate(stats: JudgeStats) -> float:
    return stats.judged / max(time.monotonic() - stats.started, 1e-9)


def _waiting(stats: JudgeStats) -> str:
    """The wait the judge's server asked for, in words."""
    left = stats.waiting_until - time.time()
    until = time.strftime("%H:%M:%S", time.localtime(stats.waiting_until))
    return f"waiting {left:,.0f} s, until {until}, as the server asked ({stats.waiting_for})"


class PassProgress:
    """A callable for ``on_event``; use it as a context manager around the passes."""

    def __init__(self, label: str = "judging with {label}", *, terminal: bool | None = None):
        self.label = label
        self.terminal = err_console.is_terminal if terminal is None else terminal
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._last: dict[str, float] = {}
        self._waits: dict[str, float] = {}
        """The end of the wait each pass's line shows (0: none)."""

    def __enter__(self) -> PassProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __call__(self, event: PassEvent) -> None:
        if event.kind == "note":
            self._print(event.message)
        elif event.kind == "start":
            self._start(event)
        else:
            self._update(event, force=event.kind == "done")

    def _print(self, message: str, **options: Any) -> None:
        console = self._progress.console if self._progress is not None else err_console
        console.print(message, **options)

    def _start(self, event: PassEvent) -> None:
        label = self.label.format(label=event.label)
        self._last[event.label] = time.monotonic()
        if not self.terminal:
            err_console.print(
                f"{label}: {event.stats.total:,} checks", soft_wrap=True, markup=False
            )
            return
        if self._progress is None:
            self._progress = _bar()
            self._progress.start()
        self._tasks[event.label] = self._progress.add_task(
            label,
            total=event.stats.total,
            short=event.label,
            done=f"0/{event.stats.total:,}",
            rate="",
            cached="0 cached",
            unscored="0 unscored",
        )

    def _update(self, event: PassEvent, *, force: bool) -> None:
        now = time.monotonic()
        every = REFRESH_S if self.terminal else LINE_EVERY_S
        stats = event.stats
        waiting = stats.waiting_until if stats.waiting_until > time.time() else 0.0
        changed = waiting != self._waits.get(event.label, 0.0)  # a wait starts or ends
        if not (force or changed) and now - self._last.get(event.label, 0.0) < every:
            return
        self._last[event.label] = now
        if waiting and waiting != self._waits.get(event.label):
            self._print(
                f"{self.label.format(label=event.label)}: {_waiting(stats)}",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
        self._waits[event.label] = waiting
        if not self.terminal:
            err_console.print(
                f"{self.label.format(label=event.label)}: {stats.done:,}/{stats.total:,} checks "
                f"({stats.cached:,} cached, {stats.unscored:,} unscored, "
                f"{_rate(stats):,.0f} checks/s)",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
            return
        task = self._tasks.get(event.label)
        if self._progress is None or task is None:
            return

        unscored = f"[red]{stats.unscored} unscored[/red]" if stats.unscored else "0 unscored"
        self._progress.update(
            task,
            completed=stats.done,
            done=f"{stats.done:,}/{stats.total:,}",
            rate="[yellow]waiting[/yellow]" if waiting else f"{_rate(stats):,.0f}/s",
            cached=f"{stats.cached:,} cached",
            unscored=unscored,
        )


_ORDER = ("label", "bar", "done", "rate", "unscored", "cached", "elapsed", "left")
"""The columns of a progress line, in display order."""
_PRIORITY = ("label", "done", "unscored", "left", "rate", "bar", "cached", "elapsed")
"""The order columns are kept in as the terminal narrows (the last goes first)."""
BAR_WIDTH = (10, 24)
"""The bar's narrowest and widest; it takes the room the other columns leave."""


def progress_columns(
    width: int, label: int, short: int, fields: dict[str, int]
) -> tuple[tuple[str, ...], bool, int]:
    """Which columns a progress line of ``width`` shows: (names in display order, whether
    the short label is used, the bar's width). ``label`` and ``short`` are the widths of
    the longest full and short labels, ``fields`` the width of every other column but
    the bar. Columns are added in ``_PRIORITY`` order while they fit (one space between
    columns); the full label is used unless the short one fits more columns."""

    def choose(first: int) -> tuple[list[str], int]:
        widths = {"label": first, "bar": BAR_WIDTH[0], **fields}
        chosen: list[str] = []
        used = -1
        for name in _PRIORITY:
            if used + 1 + widths[name] <= width:
                chosen.append(name)
                used += 1 + widths[name]
        bar = min(BAR_WIDTH[1], BAR_WIDTH[0] + width - used) if "bar" in chosen else 0
        return chosen, bar

    full, full_bar = choose(label)
    brief, brief_bar = choose(short)
    use_short = len(brief) > len(full)
    chosen, bar = (brief, brief_bar) if use_short else (full, full_bar)
    return tuple(n for n in _ORDER if n in chosen), use_short, bar


def _bar() -> Progress:
    """A rich ``Progress`` whose columns follow the console's width (``progress_columns``)."""
    from rich.progress import (
        BarColumn,
        Progress,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: dict[str, Any] = {
        "label": TextColumn("[bold]{task.description}"),
        "short": TextColumn("[bold]{task.fields[short]}"),
        "bar": BarColumn(bar_width=BAR_WIDTH[1]),
        "done": TextColumn("{task.fields[done]}"),
        "rate": TextColumn("{task.fields[rate]}"),
        "unscored": TextColumn("{task.fields[unscored]}"),
        "cached": TextColumn("{task.fields[cached]}"),
        "elapsed": TimeElapsedColumn(),
        "left": TimeRemainingColumn(),
    }

    class Fitted(Progress):
        def make_tasks_table(self, tasks: Any) -> Table:
            shown: list[Task] = [t for t in tasks if t.visible]
            if not shown:
                return super().make_tasks_table(tasks)
            width = self.console.width
            total = max(int(t.total or 0) for t in shown)
            fields = _field_widths(total)
            label = max(len(str(t.description)) for t in shown)
            short = max(len(str(t.fields.get("short", ""))) for t in shown)
            names, use_short, bar = progress_columns(width, label, short, fields)
            columns["bar"].bar_width = bar or BAR_WIDTH[0]
            self.columns = tuple(
                columns["short" if n == "label" and use_short else n] for n in names
            )
            return super().make_tasks_table(tasks)

    return Fitted(*columns.values(), console=rich_console(err_console), transient=False)


def _field_widths(total: int) -> dict[str, int]:
    """The widest each column but the label and the bar can get in a pass of ``total``
    checks (so that columns do not come and go as the counts grow)."""
    count = len(f"{total:,}")
    return {
        "done": 2 * count + 1,
        "rate": len("99,999/s"),
        "unscored": count + len(" unscored"),
        "cached": count + len(" cached"),
        "elapsed": len("0:00:00"),
        "left": len("0:00:00"),
    }


def warn_flagged(stats: JudgeStats) -> None:
    """Count the answers longer than ``long_answer_tokens`` (the first few were named as
    the pass reached them), and name those that carry invisible (zero-width or bidi)
    characters."""
    if stats.long:
        tokens = sum(t * checks for *_, t, checks in stats.long)
        err_console.print(
            f"[yellow]warning:[/yellow] {len(stats.long)} answer(s) longer than "
            f"--long-answer-tokens were each sent whole with every check (about {tokens:,} "
            "prompt tokens in all)"
        )
    if not stats.flagged:
        return
    err_console.print(
        f"[yellow]warning:[/yellow] {len(stats.flagged)} response(s) contain zero-width or bidi "
        "control characters (judged as written; review them):"
    )
    for question, model, setting, chars in stats.flagged[:20]:
        err_console.print(f"  {question} / {model} / {setting}: {' '.join(chars)}")


# -- tables that fit the terminal ----------------------------------------------------------
# Rich shrinks a table that is wider than the console by wrapping its cells and, as a last
# resort, by cutting them. A cut model name is worse than no table, so a table here is made
# by a builder that writes every model or judge id through a ``name`` function and makes
# narrower variants on request (``level`` 1: shorter headers, one space between columns;
# 2: also without secondary columns, which its caption names). Candidates are tried in
# order: full names, then short names (the part after the last ``/`` when those are
# distinct, else ``M1``, ``M2``, ...), each at level 0, 1 and 2. Each is rendered off
# screen without a width limit, and the first no wider than the console is printed (rich
# then has nothing to wrap or cut); with short names, a legend follows, one id per line.
# If none fits (a terminal narrower than about 50 columns), the table is printed as
# records instead: each row's first cell, then one ``header: value`` line per cell, full
# names included.

Namer = Callable[[str], str]
"""What a table builder calls to write a model or judge id into a cell."""
Builder = Callable[[Namer, int], "Table"]
"""Makes the table from a namer and a level (0: wide, 1: compact, 2: narrowest)."""


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
    tried = [(names, level) for names in candidates for level in (0, 1, 2)][1:]
    for names, level in tried:
        namer: Namer = (lambda n: n) if names is None else names.__getitem__
        table = build(namer, level)
        if _natural_width(table) <= width:
            break
    else:
        return _records(build(full, 0))
    return [table] if names is None else [table, _legend(names)]
