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

Offline: with ``write_only`` the backend only writes the files (for ``vllm run-batch``),
and with ``ingest`` it reads result files back.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gamut_eval.errors import GamutError, InputError
from gamut_eval.judge._endpoints import Endpoint
from gamut_eval.judge._pass import JudgeWork, KeySet, Pending
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settings import BatchSettings
from gamut_eval.judge._settle import settle
from gamut_eval.judge._store import StoredVerdict, VerdictStore
from gamut_eval.judge.backends import BackendOptions
from gamut_eval.judge.backends._batch_client import BatchClient, BatchStatus
from gamut_eval.judge.backends._batch_files import (
    BatchFile,
    BatchFileWriter,
    pending_requests,
    read_custom_ids as _custom_ids,
)
from gamut_eval.judge.backends._batch_ingest import IngestCounts, Ingester
from gamut_eval.judge.backends._batch_store import BatchJob, BatchLedger

__all__ = [
    "BatchBackend",
    "BatchRun",
    "BatchWriteReport",
    "BatchesPending",
    "batch_backend",
    "batch_directory",
    "write_round",
]


class BatchesPending(GamutError):
    """Batches are still running at the provider; rerun the same command to collect them."""


def batch_directory(store: VerdictStore, batch: BatchSettings) -> Path:
    """Where request and result files go: ``--batch-dir`` or ``<store>.batches/``."""
    return batch.directory or store.path.with_name(store.path.name + ".batches")


def _slug(judge: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", judge)[:60]


def write_round(
    pending: Iterable[Pending],
    work: JudgeWork,
    ledger: BatchLedger,
    batch: BatchSettings,
    directory: Path,
    model_name: str,
) -> list[BatchFile]:
    """Write one round's request files. Requests too large for any file (an image past
    the byte limit) are never sent: they are recorded unscored with the reason."""
    prefix = f"{_slug(work.settings.judge)}-{time.strftime('%Y%m%dT%H%M%S')}"
    writer = BatchFileWriter(directory, prefix, batch.max_requests, batch.max_bytes)
    try:
        for lines in pending_requests(pending, ledger, work.settings, model_name):
            writer.add(lines)
    except BaseException:
        writer.abort()
        raise
    files = writer.close()
    for key, size in writer.too_large:
        reason = f"request of {size} bytes is larger than a batch file may be ({batch.max_bytes})"
        row = settle(key, reason, None, work.settings)
        if isinstance(row, StoredVerdict):
            work.record(row)
    work.flush()
    return files


@dataclass
class BatchRun:
    """One judge's batch pass: rounds of files until every check is settled."""

    work: JudgeWork
    store: VerdictStore
    batch: BatchSettings
    client: BatchClient
    model_name: str
    ledger: BatchLedger = field(init=False)
    ingester: Ingester = field(init=False)
    directory: Path = field(init=False)
    _deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = BatchLedger(self.store, self.work.settings.judge)
        self.ingester = Ingester(self.work, self.ledger)
        self.directory = batch_directory(self.store, self.batch)
        wait = self.batch.max_wait_s
        self._deadline = time.monotonic() + wait if wait is not None else float("inf")

    def _event(self, message: str) -> None:
        self.work.note(message)

    async def run(self) -> None:
        """Collect batches left by an earlier process, then send rounds until every check
        is settled. Raises ``BatchesPending`` if ``max_wait_s`` ran out first."""
        resumed = self.ledger.open_jobs()
        if resumed:
            self._event(f"resuming {len(resumed)} batch job(s) recorded in {self.store.path}")
            await self._run_jobs(resumed, resumed=True)
        for round_number in range(self.work.settings.max_reasks + 2):
            if self.ledger.open_jobs():
                break
            pending = self.work.pending(count_cached=round_number == 0)
            files = write_round(
                pending, self.work, self.ledger, self.batch, self.directory, self.model_name
            )
            if not files:
                break
            requests = sum(f.requests for f in files)
            self._event(f"round {round_number + 1}: {requests} requests in {len(files)} file(s)")
            jobs = [self.ledger.add_job(f.job_id, f.path, f.requests) for f in files]
            await self._run_jobs(jobs, resumed=False)
        self._raise_if_pending()

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
            {"gamut_job": job.job_id, "gamut_judge": self.work.settings.judge[:500]},
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
        self.work.event("progress")


def ingest_files(paths: Iterable[Path], work: JudgeWork, store: VerdictStore) -> IngestCounts:
    """Ingest result files written offline (``vllm run-batch -o``); re-asks stay pending
    in the store for the next ``write`` round. Lines for keys that are not checks of this
    pass are skipped and counted."""
    known = KeySet()
    for answer in work.plan:
        for key in answer.keys:
            known.add(key)
    ledger = BatchLedger(store, work.settings.judge)
    ingester = Ingester(work, ledger, known)
    total = IngestCounts()
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: batch results file not found")
        counts = ingester.ingest_file(path)
        for name in ("lines", "stored", "reasks", "skipped", "unknown"):
            setattr(total, name, getattr(total, name) + getattr(counts, name))
    total.reasks = ledger.reask_count()
    return total


@dataclass(frozen=True)
class BatchWriteReport:
    """What a write-only batch pass wrote."""

    files: list[BatchFile]
    requests: int
    cached: int
    """Checks the store already held (not written)."""
    reasks: int
    """Requests among ``requests`` that re-ask a malformed verdict."""
    directory: Path


@dataclass
class BatchBackend:
    """The ``batch`` backend: submit and collect rounds of batch files; or only write the
    files (``write_only``), or only ingest result files (``ingest``). The judge's endpoint
    is OpenAI-compatible (the batch API lives beside chat completions)."""

    judge: ResolvedJudge
    batch: BatchSettings
    write_only: bool = False
    ingest: tuple[Path, ...] = ()
    client_factory: Callable[[Endpoint], BatchClient] | None = None
    name: str = "batch"
    writes_store: bool = True
    written: BatchWriteReport | None = None
    """What ``write_only`` wrote."""
    ingested: IngestCounts | None = None
    """What ``ingest`` ingested."""

    @property
    def exports_rows(self) -> bool:
        return not self.write_only

    @property
    def probed(self) -> bool:
        """Only a pass that submits batches talks to the endpoint."""
        return not (self.write_only or self.ingest)

    async def run(self, work: JudgeWork) -> None:
        work.track_settled = True  # rounds read the plan again and skip what they settled
        store = work.store
        if not isinstance(store, VerdictStore):
            raise InputError("the batch backend needs a verdict store file (--store)")
        if self.ingest:
            self.ingested = ingest_files(self.ingest, work, store)
            if self.ingested.reasks:
                work.stats.unfinished = f"{self.ingested.reasks} checks await a re-ask"
        elif self.write_only:
            self.written = self._write(work, store)
            work.stats.unfinished = "request files written; nothing sent"
        else:
            endpoint = self.judge.require_endpoint()
            timeout = max(work.settings.timeout_s, 600.0)
            client = (self.client_factory or (lambda e: BatchClient(e, timeout_s=timeout)))(
                endpoint
            )
            try:
                await BatchRun(work, store, self.batch, client, endpoint.model_name).run()
            finally:
                await client.aclose()

    def _write(self, work: JudgeWork, store: VerdictStore) -> BatchWriteReport:
        ledger = BatchLedger(store, work.settings.judge)
        reasks = ledger.reask_count()
        directory = batch_directory(store, self.batch)
        model_name = self.judge.require_endpoint().model_name
        files = write_round(work.pending(), work, ledger, self.batch, directory, model_name)
        requests = sum(f.requests for f in files)
        cached = work.stats.cached
        return BatchWriteReport(files, requests, cached, min(reasks, requests), directory)


def batch_backend(judge: ResolvedJudge, options: BackendOptions) -> BatchBackend:
    if options.batch_write_only and options.batch_ingest:
        raise InputError("--batch-write-only and --batch-ingest are separate steps: give one")
    return BatchBackend(
        judge, options.batch, options.batch_write_only, options.batch_ingest, options.client_factory
    )
