"""How the command line shows a judge pass: one renderer for every command's events.

Every pass reports ``PassEvent``s (start, progress, note, done). On a terminal they drive a
rich progress bar per judge (checks/s, ETA, cached, unscored); without one (CI, a log
file) a plain line is printed every ``LINE_EVERY_S`` seconds and at the end, so a long
run is never silent. Updates are throttled so the display costs nothing at 2,000 checks/s.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from gamut_eval.cli._common import err_console, rich_console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from gamut_eval.judge._pass import JudgeStats, PassEvent

__all__ = ["PassProgress", "warn_flagged"]

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
            err_console.print(f"{label}: {event.stats.total:,} checks")
            return
        if self._progress is None:
            self._progress = _bar()
            self._progress.start()
        self._tasks[event.label] = self._progress.add_task(
            label, total=event.stats.total, rate="", cached=0, unscored="0 unscored"
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
                f"{_rate(stats):,.0f} checks/s)"
            )
            return
        task = self._tasks.get(event.label)
        if self._progress is None or task is None:
            return
        unscored = f"[red]{stats.unscored} unscored[/red]" if stats.unscored else "0 unscored"
        self._progress.update(
            task,
            completed=stats.done,
            rate=f"{_rate(stats):,.0f} checks/s",
            cached=stats.cached,
            unscored=unscored,
        )


def _bar() -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TextColumn("{task.fields[cached]} cached"),
        TextColumn("{task.fields[unscored]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    return Progress(*columns, console=rich_console(err_console), transient=False)


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
