"""How the command line shows a judge pass: one renderer for every command's events.

Every pass reports ``PassEvent``s (start, progress, note, done). On a terminal they drive a
rich progress line per judge (done/total, unscored, time left, checks/s, a bar, cached,
elapsed); the columns that do not fit the terminal's width are left out, least useful
first (``progress_columns``), and a long label gives way to the judge's name, so the line
is never cut. Without a terminal (CI, a log file) a plain line is printed every
``LINE_EVERY_S`` seconds and at the end, each on one line however long, so a long run is
never silent. Updates are throttled so the display costs nothing at 2,000 checks/s.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from gamut_eval.cli._common import err_console, rich_console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from gamut_eval.judge import JudgeStats, PassEvent

__all__ = ["PassProgress", "progress_columns", "warn_flagged"]

REFRESH_S = 0.1
LINE_EVERY_S = 10.0


def _rate(stats: JudgeStats) -> float:
    return stats.judged / max(time.monotonic() - stats.started, 1e-9)


class PassProgress:
    """A callable for ``on_event``; use it as a context manager around the passes."""

    def __init__(self, label: str = "judging with {label}", *, terminal: bool | None = None):
        self.label = label
        self.terminal = err_console.is_terminal if terminal is None else terminal
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._last: dict[str, float] = {}

    def __enter__(self) -> PassProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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

    def _print(self, message: str) -> None:
        if self._progress is not None:
            self._progress.console.print(message)
        else:
            err_console.print(message)

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
        last = self._last.get(event.label, 0.0)
        every = REFRESH_S if self.terminal else LINE_EVERY_S
        if not force and now - last < every:
            return
        self._last[event.label] = now
        stats = event.stats
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
            rate=f"{_rate(stats):,.0f}/s",
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
    from rich.table import Table

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
    """Name the answers that carry invisible (zero-width or bidi) characters."""
    if not stats.flagged:
        return
    err_console.print(
        f"[yellow]warning:[/yellow] {len(stats.flagged)} response(s) contain zero-width or bidi "
        "control characters (judged as written; review them):"
    )
    for question, model, setting, chars in stats.flagged[:20]:
        err_console.print(f"  {question} / {model} / {setting}: {' '.join(chars)}")
