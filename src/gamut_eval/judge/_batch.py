"""The ``batch`` judge backend: provider batch APIs (half price) and ``vllm run-batch``.

A pass is a few rounds. Round one writes every check the store lacks as Batch API JSONL
(``_batch_files``), uploads each file to ``/files``, creates a batch on ``/batches``, polls
it, downloads the output and error files and ingests them (``_batch_ingest``). Malformed
replies come back as re-asks, which the next round sends with their conversation, up to
``max_reasks``; errors inside a batch are stored unscored with the reason.

Resumable: each file's job (file id, batch id, state) is written to the store's database
(``_batch_store``) before the next step, so a restart collects what was submitted instead
of submitting it again. A crash between creating a batch and recording its id is covered
too: a job left at ``uploaded`` first looks for a batch made from its file.

Offline: ``write_batch_requests`` only writes the files (for ``vllm run-batch``), and
``ingest_batch_results`` reads result files back.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gamut_eval.errors import GamutError, InputError
from gamut_eval.judge._batch_client import BatchClient, BatchStatus
from gamut_eval.judge._batch_files import BatchFile, BatchFileWriter, KeySet, pending_requests
from gamut_eval.judge._batch_files import read_custom_ids as _custom_ids
from gamut_eval.judge._batch_ingest import IngestCounts, Ingester
from gamut_eval.judge._batch_store import BatchJob, BatchLedger
from gamut_eval.judge._endpoints import Endpoint, resolve_endpoint
from gamut_eval.judge._engine import JudgeStats, PlannedResponse
from gamut_eval.judge._rounds import settle
from gamut_eval.judge._scale_settings import BatchSettings
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict, VerdictStore

__all__ = [
    "BatchRun",
    "BatchesPending",
    "batch_directory",
    "batch_endpoint",
    "write_round",
]

Plans = Callable[[], Iterable[PlannedResponse]]
"""Streams the run's planned responses afresh (each round re-reads the responses file)."""
Event = Callable[[str], Any]


class BatchesPending(GamutError):
    """Batches are still running at the provider; rerun the same command to collect them."""


def batch_directory(store: VerdictStore, batch: BatchSettings) -> Path:
    """Where request and result files go: ``--batch-dir`` or ``<store>.batches/``."""
    return batch.directory or store.path.with_name(store.path.name + ".batches")


def batch_endpoint(settings: JudgeSettings) -> Endpoint:
    """The judge's OpenAI-compatible endpoint (the batch API lives beside chat completions)."""
    try:
        return resolve_endpoint(settings.judge, base_url=settings.base_url)
    except InputError as exc:
        raise InputError(
            f"the batch backend needs an OpenAI-compatible judge endpoint: {exc}"
        ) from None


def _slug(judge: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", judge)[:60]


def write_round(
    plans: Iterable[PlannedResponse],
    store: VerdictStore,
    ledger: BatchLedger,
    settings: JudgeSettings,
    batch: BatchSettings,
    directory: Path,
    *,
    model_name: str,
    skip: KeySet,
    stats: JudgeStats | None,
) -> tuple[list[BatchFile], list[StoredVerdict]]:
    """Write one round's request files; also the unscored rows of requests too large for
    any file (an image past the byte limit), which are never sent."""
    prefix = f"{_slug(settings.judge)}-{time.strftime('%Y%m%dT%H%M%S')}"
    writer = BatchFileWriter(directory, prefix, batch.max_requests, batch.max_bytes)
    try:
        for lines in pending_requests(
            plans, store, ledger, settings, model_name, skip=skip, stats=stats
        ):
            writer.add(lines)
    except BaseException:
        writer.abort()
        raise
    files = writer.close()
    rows = []
    for key, size in writer.too_large:
        reason = f"request of {size} bytes is larger than a batch file may be ({batch.max_bytes})"
        row = settle(key, reason, None, settings)
        if isinstance(row, StoredVerdict):
            rows.append(row)
    return files, rows


@dataclass
class BatchRun:
    """One judge's batch pass over one store."""

    store: VerdictStore
    settings: JudgeSettings
    batch: BatchSettings
    client: BatchClient
    model_name: str
    stats: JudgeStats
    on_event: Event | None = None
    on_progress: Callable[[JudgeStats], Any] | None = None
    settled: KeySet = field(default_factory=KeySet)
    ledger: BatchLedger = field(init=False)
    ingester: Ingester = field(init=False)
    directory: Path = field(init=False)
    _deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = BatchLedger(self.store, self.settings.judge)
        self.ingester = Ingester(self.store, self.ledger, self.settings, self.stats, self.settled)
        self.directory = batch_directory(self.store, self.batch)
        wait = self.batch.max_wait_s
        self._deadline = time.monotonic() + wait if wait is not None else float("inf")

    def _event(self, message: str) -> None:
        if self.on_event is not None:
            self.on_event(message)

    async def run(self, plans: Plans) -> None:
        """Collect batches left by an earlier process, then send rounds until every check
        is settled. Raises ``BatchesPending`` if ``max_wait_s`` ran out first."""
        resumed = self.ledger.open_jobs()
        if resumed:
            self._event(f"resuming {len(resumed)} batch job(s) recorded in {self.store.path}")
            await self._run_jobs(resumed, resumed=True)
        for round_number in range(self.settings.max_reasks + 2):
            if self.ledger.open_jobs():
                break
            files, too_large = write_round(
                plans(),
                self.store,
                self.ledger,
                self.settings,
                self.batch,
                self.directory,
                model_name=self.model_name,
                skip=self.settled,
                stats=self.stats if round_number == 0 else None,
            )
            self._settle_rows(too_large)
            if not files:
                break
            requests = sum(f.requests for f in files)
            self._event(f"round {round_number + 1}: {requests} requests in {len(files)} file(s)")
            jobs = [self.ledger.add_job(f.job_id, f.path, f.requests) for f in files]
            await self._run_jobs(jobs, resumed=False)
        self._raise_if_pending()

    def _settle_rows(self, rows: list[StoredVerdict]) -> None:
        self.store.put(rows)
        for row in rows:
            self.settled.add(row.key)
            self.stats.record(row)

    def _raise_if_pending(self) -> None:
        still = self.ledger.open_jobs()
        if still:
            ids = ", ".join(j.batch_id or j.job_id for j in still[:5])
            raise BatchesPending(
                f"{len(still)} batch(es) still running at the provider ({ids}); their ids are "
                f"kept in {self.store.path}: run the same command again to collect them"
            )

    async def _run_jobs(self, jobs: list[BatchJob], *, resumed: bool) -> None:
        limit = asyncio.Semaphore(self.batch.max_active or len(jobs) or 1)

        async def one(job: BatchJob) -> None:
            async with limit:
                await self._drive(job, resumed)

        try:
            async with asyncio.TaskGroup() as group:
                for job in jobs:
                    group.create_task(one(job))
        except BaseExceptionGroup as group_error:  # the first failure, as itself (exit codes)
            raise group_error.exceptions[0] from None

    async def _drive(self, job: BatchJob, resumed: bool) -> None:
        """Take one job from wherever it stopped to ingested (or to the deadline)."""
        if job.state in ("written", "uploaded") and not job.path.exists():
            self._event(f"{job.job_id}: request file {job.path} is gone; its checks are re-planned")
            self.ledger.forget(job)
            return
        if job.state == "written":
            file_id = await self.client.upload(job.path)
            job = self.ledger.update(job, "uploaded", input_file_id=file_id)
        if job.state == "uploaded":
            job = await self._submit(job, resumed)
        status = await self._poll(job)
        if status is not None:
            await self._collect(job, status)

    async def _submit(self, job: BatchJob, resumed: bool) -> BatchJob:
        assert job.input_file_id is not None
        found = await self.client.find_by_input_file(job.input_file_id) if resumed else None
        status = found or await self.client.create(
            job.input_file_id,
            self.batch.completion_window,
            {"gamut_job": job.job_id, "gamut_judge": self.settings.judge[:500]},
        )
        self._event(f"{job.job_id}: batch {status.id} ({job.requests} requests) {status.status}")
        return self.ledger.update(
            job, "submitted", batch_id=status.id, provider_status=status.status
        )

    async def _poll(self, job: BatchJob) -> BatchStatus | None:
        """Wait for a terminal status; None if the deadline comes first."""
        assert job.batch_id is not None
        last = job.provider_status
        while True:
            status = await self.client.get(job.batch_id)
            if status.status != last:
                self._event(f"batch {status.id}: {status.status}")
                self.ledger.update(job, "submitted", provider_status=status.status)
                last = status.status
            if status.terminal:
                return status
            if time.monotonic() + self.batch.poll_interval_s > self._deadline:
                return None
            await asyncio.sleep(self.batch.poll_interval_s)

    async def _collect(self, job: BatchJob, status: BatchStatus) -> None:
        seen: set[str] = set()
        downloaded = []
        for file_id, kind in ((status.output_file_id, "output"), (status.error_file_id, "errors")):
            if file_id:
                dest = self.directory / f"{job.job_id}.{kind}.jsonl"
                await self.client.download(file_id, dest)
                seen |= self.ingester.ingest_file(dest).seen
                downloaded.append(dest)
        ids = _custom_ids(job.path) if job.path.exists() else []
        detail = f": {status.errors}" if status.errors else ""
        reason = f"no result in batch {status.id} ({status.status}{detail})"
        missing = self.ingester.missing(ids, seen, reason)
        self.ledger.update(job, "ingested", provider_status=status.status)
        for path in (job.path, *downloaded):  # the verdicts are in the store now
            path.unlink(missing_ok=True)
        self._event(
            f"batch {status.id} {status.status}: {len(seen)} results ingested"
            + (f", {missing} requests without a result" if missing else "")
        )
        if self.on_progress is not None:
            self.on_progress(self.stats)


def ingest_files(
    paths: Iterable[Path],
    store: VerdictStore,
    settings: JudgeSettings,
    stats: JudgeStats,
    known: KeySet,
) -> IngestCounts:
    """Ingest result files written offline (``vllm run-batch -o``); re-asks stay pending
    in the store for the next ``write`` round."""
    ledger = BatchLedger(store, settings.judge)
    ingester = Ingester(store, ledger, settings, stats, KeySet(), known)
    total = IngestCounts()
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: batch results file not found")
        counts = ingester.ingest_file(path)
        for name in ("lines", "stored", "reasks", "skipped", "unknown"):
            setattr(total, name, getattr(total, name) + getattr(counts, name))
    total.reasks = ledger.reask_count()
    return total
