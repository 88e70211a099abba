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

from gamut_eval.judge import (
    BackendOptions,
    Executor,
    JudgePlan,
    JudgeSettings,
    JudgeStats,
    OnEvent,
    VerdictStore,
    judge_pass,
    make_backend,
    verdict_rows,
)
from gamut_eval.quality._rows import Verdicts, verdicts_from_rows

__all__ = ["ExecutorFactory", "judge_in_store", "store_directory"]

ExecutorFactory = Callable[[JudgeSettings], Executor]


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
    plan: JudgePlan,
    store_path: Path,
    *,
    label: str,
    executor_factory: ExecutorFactory | None = None,
    on_event: OnEvent | None = None,
) -> tuple[Verdicts, JudgeStats]:
    """Judge every check of ``plan`` not yet in ``store_path``; all its verdicts.

    Callers make the plan first (which validates the answers), so bad input never
    creates a store.
    """
    backend = make_backend(plan.settings, BackendOptions(executor_factory=executor_factory))
    with VerdictStore(store_path) as store:
        stats = judge_pass(plan, backend, store, on_event, label=label)
        verdicts = verdicts_from_rows(vars(row) for row in verdict_rows(plan, store))
    return verdicts, stats
