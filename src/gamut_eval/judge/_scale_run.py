"""Whole-file judge passes on the scale-out backends: the library behind
``gamut judge --backend batch|ray``.

Each function has ``judge_responses``'s shape and contract: the responses are validated
before the store is opened, verdicts go into the same store (same keys, same rows), the
verdict rows are exported from the store, and a pass above ``max_unscored_rate`` raises
``UnscoredRateExceeded`` after writing its rows.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gamut_eval._files import atomic_writer
from gamut_eval.dataset import Dataset
from gamut_eval.judge._batch import (
    BatchRun,
    batch_directory,
    batch_endpoint,
    ingest_files,
    write_round,
)
from gamut_eval.judge._batch_client import BatchClient
from gamut_eval.judge._batch_files import BatchFile, KeySet
from gamut_eval.judge._batch_ingest import IngestCounts
from gamut_eval.judge._batch_store import BatchLedger
from gamut_eval.judge._endpoints import Endpoint
from gamut_eval.judge._engine import JudgeStats, plan_responses
from gamut_eval.judge._run import (
    JudgeReport,
    check_unscored_rate,
    count_checks,
    verdict_rows,
    write_verdict_rows,
)
from gamut_eval.judge._scale_settings import BatchSettings, RaySettings
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import VerdictStore

__all__ = [
    "BatchWriteReport",
    "ingest_batch_results",
    "judge_responses_batch",
    "judge_responses_ray",
    "write_batch_requests",
]

Progress = Callable[[JudgeStats], Any] | None


@dataclass(frozen=True)
class BatchWriteReport:
    """What ``write_batch_requests`` wrote."""

    files: list[BatchFile]
    requests: int
    cached: int
    """Checks the store already held (not written)."""
    reasks: int
    """Requests among ``requests`` that re-ask a malformed verdict."""
    directory: Path


def _judge_with(
    into_store: Callable[[VerdictStore, JudgeStats], None],
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store_path: Path,
    out: Path | None,
    *,
    wait_for_store_s: float,
    on_start: Callable[[int], Any] | None,
    check_rate: bool = True,
) -> JudgeReport:
    total = count_checks(dataset, responses)
    if on_start is not None:
        on_start(total)
    with VerdictStore(store_path, wait_s=wait_for_store_s) as store:
        stats = JudgeStats(total=total)
        into_store(store, stats)
        rows = verdict_rows(dataset, responses, settings, store)
        if out is None:
            count, unscored = write_verdict_rows(rows, sys.stdout)
        else:
            with atomic_writer(out) as handle:
                count, unscored = write_verdict_rows(rows, handle)
    report = JudgeReport(stats, count, unscored)
    if check_rate:
        check_unscored_rate(report, settings)
    return report


def judge_responses_batch(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    batch: BatchSettings,
    store_path: Path,
    out: Path | None,
    *,
    client_factory: Callable[[Endpoint], BatchClient] | None = None,
    wait_for_store_s: float = 0.0,
    on_progress: Progress = None,
    on_start: Callable[[int], Any] | None = None,
    on_event: Callable[[str], Any] | None = None,
) -> JudgeReport:
    """Judge through the provider's batch API (``/files`` + ``/batches``), resuming any
    batches an earlier process submitted. Raises ``BatchesPending`` when
    ``batch.max_wait_s`` runs out before the provider finishes."""
    endpoint = batch_endpoint(settings)
    factory = client_factory or (lambda e: BatchClient(e, timeout_s=max(settings.timeout_s, 600.0)))

    def into_store(store: VerdictStore, stats: JudgeStats) -> None:
        async def main() -> None:
            client = factory(endpoint)
            try:
                run = BatchRun(
                    store,
                    settings,
                    batch,
                    client,
                    endpoint.model_name,
                    stats,
                    on_event,
                    on_progress,
                )
                await run.run(lambda: plan_responses(dataset, responses, settings))
            finally:
                await client.aclose()

        asyncio.run(main())

    return _judge_with(
        into_store,
        dataset,
        responses,
        settings,
        store_path,
        out,
        wait_for_store_s=wait_for_store_s,
        on_start=on_start,
    )


def write_batch_requests(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    batch: BatchSettings,
    store_path: Path,
    *,
    wait_for_store_s: float = 0.0,
) -> BatchWriteReport:
    """Only write the request files of the checks the store lacks (with the conversation
    of any pending re-ask), for ``vllm run-batch`` or a manual upload; nothing is sent."""
    count_checks(dataset, responses)  # validate before the store is opened
    model_name = batch_endpoint(settings).model_name
    with VerdictStore(store_path, wait_s=wait_for_store_s) as store:
        ledger = BatchLedger(store, settings.judge)
        reasks = ledger.reask_count()
        stats = JudgeStats()
        directory = batch_directory(store, batch)
        files, too_large = write_round(
            plan_responses(dataset, responses, settings),
            store,
            ledger,
            settings,
            batch,
            directory,
            model_name=model_name,
            skip=KeySet(),
            stats=stats,
        )
        store.put(too_large)
    requests = sum(f.requests for f in files)
    return BatchWriteReport(files, requests, stats.cached, min(reasks, requests), directory)


def ingest_batch_results(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store_path: Path,
    results: Iterable[Path],
    out: Path | None,
    *,
    wait_for_store_s: float = 0.0,
) -> tuple[JudgeReport, IngestCounts]:
    """Ingest batch result files (OpenAI's or ``vllm run-batch``'s output), then export the
    verdict rows. Lines for keys that are not checks of this dataset and responses are
    skipped and counted. While re-asks are pending the pass is unfinished, so the unscored
    rate is not enforced until they are answered."""
    counts = IngestCounts()

    def into_store(store: VerdictStore, stats: JudgeStats) -> None:
        known = KeySet()
        for plan in plan_responses(dataset, responses, settings):
            for key in plan.keys:
                known.add(key)
        nonlocal counts
        counts = ingest_files(results, store, settings, stats, known)

    report = _judge_with(
        into_store,
        dataset,
        responses,
        settings,
        store_path,
        out,
        wait_for_store_s=wait_for_store_s,
        on_start=None,
        check_rate=False,
    )
    if counts.reasks == 0:
        check_unscored_rate(report, settings)
    return report, counts


def judge_responses_ray(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    ray_settings: RaySettings,
    store_path: Path,
    out: Path | None,
    *,
    wait_for_store_s: float = 0.0,
    on_progress: Progress = None,
    on_start: Callable[[int], Any] | None = None,
) -> JudgeReport:
    """Judge on a Ray cluster (``gamut-eval[ray]``): Ray Data over OpenAI-compatible
    endpoints, or over vLLM engines with ``ray.data.llm``; the driver writes the store."""
    from gamut_eval.judge._ray import judge_ray_into_store

    def into_store(store: VerdictStore, stats: JudgeStats) -> None:
        plans = plan_responses(dataset, responses, settings)
        judge_ray_into_store(plans, store, settings, ray_settings, stats, on_progress)

    return _judge_with(
        into_store,
        dataset,
        responses,
        settings,
        store_path,
        out,
        wait_for_store_s=wait_for_store_s,
        on_start=on_start,
    )
