"""What a batch run must remember across restarts, kept in the verdict store's own file.

Two tables, added beside ``verdicts`` with ``CREATE TABLE IF NOT EXISTS`` (a store written
before they existed opens unchanged; readers of ``verdicts`` never see them):

- ``batch_jobs``: one row per batch file, from written to ingested, with the provider's
  file and batch ids. A restart reads it to *collect* what was submitted instead of
  submitting it again (a batch is billed once).
- ``batch_reasks``: checks whose reply was not a valid verdict, with the conversation so
  far, so the next round (in this process or the next) re-asks them as the online backends do.

They go through the store's connection: the store's ``flock`` already makes this process
the only writer, and one connection means one transaction order, so there is no second
writer to wait for (``database is locked`` is impossible by construction).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gamut_eval.judge._settle import Reask
from gamut_eval.judge._store import VerdictStore

__all__ = ["BatchJob", "BatchLedger", "JobState"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_jobs (
    job_id TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    path TEXT NOT NULL,
    requests INTEGER NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('written', 'uploaded', 'submitted', 'ingested')),
    input_file_id TEXT,
    batch_id TEXT,
    provider_status TEXT,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_reasks (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    history TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    result_id TEXT NOT NULL
) WITHOUT ROWID;
"""

JobState = str
"""``written`` -> ``uploaded`` (file id known) -> ``submitted`` (batch id known) ->
``ingested`` (results in the verdict store)."""

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One batch file and how far it got."""

    job_id: str
    judge: str
    path: Path
    requests: int
    state: JobState
    input_file_id: str | None = None
    batch_id: str | None = None
    provider_status: str | None = None


class BatchLedger:
    """Batch jobs and pending re-asks of one judge, in ``store``'s database file."""

    def __init__(self, store: VerdictStore, judge: str) -> None:
        # The store's own connection, on purpose (see the module docstring).
        self._db: sqlite3.Connection = store._db
        self.judge = judge
        self._db.executescript(_SCHEMA)

    # -- jobs -----------------------------------------------------------------------------

    def add_job(self, job_id: str, path: Path, requests: int) -> BatchJob:
        self._db.execute(
            "INSERT OR REPLACE INTO batch_jobs (job_id, judge, path, requests, state, updated_at)"
            " VALUES (?, ?, ?, ?, 'written', ?)",
            (job_id, self.judge, str(path), requests, time.time()),
        )
        return BatchJob(job_id, self.judge, path, requests, "written")

    def update(self, job: BatchJob, state: JobState, **ids: str | None) -> BatchJob:
        """Move ``job`` to ``state``, recording any of input_file_id, batch_id,
        provider_status given."""
        values = {
            "input_file_id": ids.get("input_file_id", job.input_file_id),
            "batch_id": ids.get("batch_id", job.batch_id),
            "provider_status": ids.get("provider_status", job.provider_status),
        }
        self._db.execute(
            "UPDATE batch_jobs SET state = ?, input_file_id = ?, batch_id = ?,"
            " provider_status = ?, updated_at = ? WHERE job_id = ?",
            (state, *values.values(), time.time(), job.job_id),
        )
        return BatchJob(job.job_id, job.judge, job.path, job.requests, state, *values.values())

    def forget(self, job: BatchJob) -> None:
        self._db.execute("DELETE FROM batch_jobs WHERE job_id = ?", (job.job_id,))

    def open_jobs(self) -> list[BatchJob]:
        """This judge's jobs not yet ingested, oldest first."""
        query = (
            "SELECT job_id, judge, path, requests, state, input_file_id, batch_id,"
            " provider_status FROM batch_jobs WHERE judge = ? AND state != 'ingested'"
            " ORDER BY updated_at, job_id"
        )
        return [
            BatchJob(r[0], r[1], Path(r[2]), r[3], r[4], r[5], r[6], r[7])
            for r in self._db.execute(query, (self.judge,))
        ]

    def job_count(self) -> dict[str, int]:
        """This judge's jobs per state."""
        query = "SELECT state, COUNT(*) FROM batch_jobs WHERE judge = ? GROUP BY state"
        return dict(self._db.execute(query, (self.judge,)).fetchall())

    # -- re-asks --------------------------------------------------------------------------

    def reasks(self, keys: Sequence[str]) -> dict[str, Reask]:
        """Pending re-asks among ``keys``."""
        out: dict[str, Reask] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = tuple(keys[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            query = (
                "SELECT key, history, prompt_tokens, completion_tokens, cached_tokens, result_id"
                f" FROM batch_reasks WHERE key IN ({marks})"
            )
            for row in self._db.execute(query, chunk):
                history = tuple((str(r), str(e)) for r, e in json.loads(row[1]))
                out[row[0]] = Reask(row[0], history, row[2], row[3], row[4], row[5])
        return out

    def settle_reasks(self, pending: Iterable[Reask], finished: Iterable[str]) -> None:
        """In one transaction: record new re-asks, drop those of checks now settled."""
        rows = [
            (
                r.key,
                self.judge,
                json.dumps(r.history),
                r.prompt_tokens,
                r.completion_tokens,
                r.cached_tokens,
                r.result_id,
            )
            for r in pending
        ]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("DELETE FROM batch_reasks WHERE key = ?", [(k,) for k in finished])
            self._db.executemany(
                "INSERT OR REPLACE INTO batch_reasks VALUES (?, ?, ?, ?, ?, ?, ?)", rows
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def reask_count(self) -> int:
        query = "SELECT COUNT(*) FROM batch_reasks WHERE judge = ?"
        return int(self._db.execute(query, (self.judge,)).fetchone()[0])
