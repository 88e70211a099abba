"""A rich progress bar for judge runs: checks/s, ETA, cached, unscored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from gamut_eval.cli._common import err_console
from gamut_eval.judge._engine import JudgeStats

_REFRESH_S = 0.1


class JudgeProgress:
    """Callbacks for ``judge_responses``; throttled so the bar costs nothing at 2,000/s."""

    def __init__(self, progress: Progress, label: str) -> None:
        self.progress = progress
        self.label = label
        self.task: TaskID | None = None
        self.last = 0.0

    def start(self, total: int) -> None:
        self.task = self.progress.add_task(self.label, total=total, rate="", cached=0, unscored="")

    def update(self, stats: JudgeStats, force: bool = False) -> None:
        now = time.monotonic()
        if self.task is None or (not force and now - self.last < _REFRESH_S):
            return
        self.last = now
        elapsed = max(now - stats.started, 1e-9)
        unscored = f"[red]{stats.unscored} unscored[/red]" if stats.unscored else "0 unscored"
        self.progress.update(
            self.task,
            completed=stats.done,
            rate=f"{stats.judged / elapsed:,.0f} checks/s",
            cached=stats.cached,
            unscored=unscored,
        )


@contextmanager
def judge_progress(label: str) -> Iterator[JudgeProgress]:
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
    with Progress(*columns, console=err_console, transient=False) as progress:
        tracker = JudgeProgress(progress, label)
        yield tracker
