"""Judging for quality measurements: every run in a store of its own.

The verdict store is a cache keyed by content (judge, prompt version, question, response,
check text), which is what makes ordinary runs resumable, and exactly what a stability
or order measurement must not hit: a repeat served from the cache would agree with the
first run by construction. So each repeat (and each probe run that sends the same
content again) gets its own store file in a store directory. A temporary directory by
default; a kept directory (``--store-dir``) makes an interrupted measurement resume
repeat by repeat, since each store still only caches its own repeat.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from gamut_eval.dataset import Dataset
from gamut_eval.judge._engine import JudgeStats
from gamut_eval.judge._run import judge_into_store, verdict_rows
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import VerdictStore
from gamut_eval.judge._types import Executor
from gamut_eval.quality._rows import Verdicts, verdicts_from_rows

__all__ = ["ExecutorFactory", "JudgeObserver", "judge_in_store", "store_directory"]

ExecutorFactory = Callable[[JudgeSettings], Executor]


class JudgeObserver(Protocol):
    """Progress of the judge runs a measurement makes (the CLI draws bars)."""

    def start(self, label: str, total: int) -> None:
        """A run of ``total`` checks begins."""

    def update(self, stats: JudgeStats) -> None:
        """Called after each verdict."""

    def done(self, stats: JudgeStats) -> None:
        """The run finished."""


@contextlib.contextmanager
def store_directory(path: Path | None) -> Iterator[Path]:
    """``path`` (created if needed, kept afterwards), or a temporary directory."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="gamut-quality-") as tmp:
        yield Path(tmp)


def judge_in_store(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store_path: Path,
    *,
    total: int,
    label: str,
    executor_factory: ExecutorFactory | None = None,
    observer: JudgeObserver | None = None,
) -> tuple[Verdicts, JudgeStats]:
    """Judge every check of ``responses`` not yet in ``store_path``; all its verdicts.

    ``total`` is ``count_checks``'s result: callers validate the responses first, so bad
    input never creates a store.
    """
    if observer is not None:
        observer.start(label, total)
    with VerdictStore(store_path) as store:
        stats = judge_into_store(
            dataset,
            responses,
            settings,
            store,
            executor_factory=executor_factory,
            on_progress=observer.update if observer is not None else None,
            total=total,
        )
        verdicts = verdicts_from_rows(verdict_rows(dataset, responses, settings, store))
    if observer is not None:
        observer.done(stats)
    return verdicts, stats
