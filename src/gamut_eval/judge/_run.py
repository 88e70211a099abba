"""Judging a whole responses file: the library function behind ``gamut judge``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gamut_eval._files import atomic_writer
from gamut_eval.dataset import Dataset
from gamut_eval.errors import GamutError
from gamut_eval.judge._engine import JudgeStats, judge_planned, plan_responses
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import VerdictStore
from gamut_eval.judge._types import Executor
from gamut_eval.responses import check_responses

__all__ = [
    "JudgeReport",
    "UnscoredRateExceeded",
    "check_unscored_rate",
    "count_checks",
    "judge_into_store",
    "judge_responses",
    "make_executor",
    "verdict_rows",
    "write_verdict_rows",
]

VERDICT_ROW_KEYS = (
    "question_id",
    "model",
    "setting",
    "judge",
    "check_id",
    "verdict",
    "status",
    "reason",
    "explanation",
    "attempts",
)


class UnscoredRateExceeded(GamutError):
    """Too many checks could not be graded: the judge, not the models, is the problem."""


@dataclass(frozen=True)
class JudgeReport:
    """The outcome of judging one responses file with one judge."""

    stats: JudgeStats
    rows: int
    """Verdict rows written."""
    unscored: int
    """Rows without a verdict."""

    @property
    def unscored_rate(self) -> float:
        return self.unscored / self.rows if self.rows else 0.0


def make_executor(settings: JudgeSettings) -> Executor:
    """The executor ``settings`` asks for (``auto``: fast where the provider speaks OpenAI)."""
    from gamut_eval.judge._endpoints import default_backend, resolve_endpoint
    from gamut_eval.judge._offline import OFFLINE_JUDGE, OfflineExecutor

    if settings.judge == OFFLINE_JUDGE:
        return OfflineExecutor()
    backend = default_backend(settings.judge) if settings.backend == "auto" else settings.backend
    if backend == "fast":
        from gamut_eval.judge._fast import FastConfig, FastExecutor

        config = FastConfig(
            concurrency=settings.concurrency,
            rpm=settings.rpm,
            tpm=settings.tpm,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            structured_output=settings.structured_output,
        )
        return FastExecutor(resolve_endpoint(settings.judge, base_url=settings.base_url), config)
    from gamut_eval.judge._inspect import InspectConfig, InspectExecutor

    inspect_config = InspectConfig(
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        max_retries=settings.max_retries,
        timeout_s=max(1, round(settings.timeout_s)),
        max_connections=settings.concurrency,
        structured_output=settings.structured_output,
        batch=settings.inspect_batch,
    )
    return InspectExecutor(settings.judge, inspect_config)


def count_checks(dataset: Dataset, responses: Path) -> int:
    """Validate the responses file against the dataset; the number of (response, check) pairs."""
    per_question = check_responses(responses, set(dataset.by_id()))
    checklists = dataset.checklists()
    return sum(n * len(checklists[qid].checks) for qid, n in per_question.items())


def verdict_rows(
    dataset: Dataset, responses: Path, settings: JudgeSettings, store: VerdictStore
) -> Iterator[dict[str, Any]]:
    """Stream the verdict rows of one judge over a responses file, from the store."""
    for plan in plan_responses(dataset, responses, settings):
        stored = store.get(plan.keys)
        for key, check in zip(plan.keys, plan.checks, strict=True):
            row = stored.get(key)
            yield {
                "question_id": plan.row.question_id,
                "model": plan.row.model,
                "setting": plan.row.setting,
                "judge": settings.judge,
                "check_id": check.id,
                "verdict": row.verdict if row else None,
                "status": row.status if row else "unscored",
                "reason": (row.reason if row else "not judged (the run was interrupted)"),
                "explanation": row.explanation if row else "",
                "attempts": row.attempts if row else 0,
            }


def write_verdict_rows(rows: Iterator[dict[str, Any]], handle: IO[str]) -> tuple[int, int]:
    """Write rows as JSONL; return (rows, unscored rows)."""
    import json

    count = unscored = 0
    for row in rows:
        handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        count += 1
        unscored += row["verdict"] is None
    return count, unscored


def judge_into_store(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store: VerdictStore,
    *,
    executor_factory: Callable[[JudgeSettings], Executor] | None = None,
    on_progress: Callable[[JudgeStats], Any] | None = None,
    total: int | None = None,
) -> JudgeStats:
    """Judge every check of every response that ``store`` does not already hold.

    The executor is made inside the run's event loop (executors hold connections bound to
    one loop) by ``executor_factory`` (default ``make_executor``) and closed at the end.
    ``total`` is ``count_checks``'s result when the caller already validated the responses.
    """
    if total is None:
        total = count_checks(dataset, responses)
    stats = JudgeStats(total=total)
    factory = executor_factory or make_executor
    asyncio.run(_judge(dataset, responses, settings, store, stats, factory, on_progress))
    return stats


def check_unscored_rate(report: JudgeReport, settings: JudgeSettings) -> None:
    """Raise ``UnscoredRateExceeded`` when too many checks could not be graded."""
    if report.unscored_rate <= settings.max_unscored_rate:
        return
    reasons = (
        ", ".join(f"{r} x{n}" for r, n in report.stats.reasons.most_common(5)) or "see the rows"
    )
    raise UnscoredRateExceeded(
        f"{report.unscored} of {report.rows} checks ({100 * report.unscored_rate:.1f}%) could "
        f"not be graded by {settings.judge}, above --max-unscored-rate "
        f"{settings.max_unscored_rate:g}; no score should be reported from this run. "
        f"Reasons: {reasons}. Rerun to retry them."
    )


def judge_responses(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store_path: Path,
    out: Path | None,
    *,
    executor_factory: Callable[[JudgeSettings], Executor] | None = None,
    wait_for_store_s: float = 0.0,
    on_progress: Callable[[JudgeStats], Any] | None = None,
    on_start: Callable[[int], Any] | None = None,
) -> JudgeReport:
    """Judge every check of every response not already in the store, then export rows to
    ``out`` (standard output when None).

    The responses are validated before the store is opened, so bad input never creates or
    locks a store. Raises ``UnscoredRateExceeded`` (after writing the rows, so they can be
    inspected) when the share of unscored checks passes ``settings.max_unscored_rate``.
    """
    total = count_checks(dataset, responses)
    if on_start is not None:
        on_start(total)
    with VerdictStore(store_path, wait_s=wait_for_store_s) as store:
        stats = judge_into_store(
            dataset,
            responses,
            settings,
            store,
            executor_factory=executor_factory,
            on_progress=on_progress,
            total=total,
        )
        rows = verdict_rows(dataset, responses, settings, store)
        if out is None:
            count, unscored = write_verdict_rows(rows, sys.stdout)
        else:
            with atomic_writer(out) as handle:
                count, unscored = write_verdict_rows(rows, handle)
    report = JudgeReport(stats, count, unscored)
    check_unscored_rate(report, settings)
    return report


async def _judge(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store: VerdictStore,
    stats: JudgeStats,
    factory: Callable[[JudgeSettings], Executor],
    on_progress: Callable[[JudgeStats], Any] | None,
) -> None:
    executor = factory(settings)
    try:
        plans = plan_responses(dataset, responses, settings)
        await judge_planned(plans, executor, store, settings, stats, on_progress)
    finally:
        await executor.aclose()
