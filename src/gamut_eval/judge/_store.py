"""The verdict store: SQLite in WAL mode, one row per content hash.

The key hashes everything that determines a verdict (judge, prompt version, question,
response, check text, image), so a resumed run sends only what is missing and a re-judge
after editing one check sends only that check. Only successful verdicts count as done:
unscored rows are kept for reporting but retried by the next run (errors are never cached).

Concurrency: one writer per store. A writer holds the lock ``<store>.lock`` (``_lock.py``:
the one lock, also a run folder's, which a run hands to its store) for its whole life, so a
second process on the same store waits (``wait_s``) or refuses with a message naming the
holder, instead of racing it, double-billing, or dying on ``database is locked``. Readers
(exports, reports) need no lock: WAL lets them read while a run writes.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar

from gamut_eval._lock import Held, LockBusy, hold, lock_key
from gamut_eval.errors import GamutError

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    verdict TEXT,
    explanation TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'unscored')),
    reason TEXT,
    attempts INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    latency_ms REAL NOT NULL,
    created_at REAL NOT NULL,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
"""
_ADDED = {"cache_write_tokens": "INTEGER NOT NULL DEFAULT 0"}
"""Columns added since the first schema: a store written before them gets them when a
writer opens it, and reads them as 0 until then."""


@dataclass(frozen=True, slots=True)
class StoredVerdict:
    """One judged (response, check) content hash."""

    key: str
    judge: str
    prompt_version: str
    verdict: str | None
    """``None`` when unscored."""
    explanation: str
    status: str
    """``ok`` or ``unscored``."""
    reason: str | None
    """Why it is unscored."""
    attempts: int
    """Judge calls made (1 + re-asks)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    latency_ms: float = 0.0
    created_at: float = 0.0
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's cache (part of ``prompt_tokens``; Anthropic
    reports and bills them apart)."""


_COLUMNS = [f.name for f in fields(StoredVerdict)]
_INSERT = (
    f"INSERT OR REPLACE INTO verdicts ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _COLUMNS)})"
)
_CHUNK = 500  # keys per IN (...) query, well under SQLite's variable limit


class StoreError(GamutError):
    """The verdict store cannot be opened or used."""


class StoreBusyError(StoreError, LockBusy):
    """Another process is writing to this store (exit 2: nothing was changed)."""


T = TypeVar("T")


def chunked(items: Iterable[T], size: int = _CHUNK) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last may be shorter)."""
    rest = iter(items)
    while chunk := list(itertools.islice(rest, size)):
        yield chunk


def keyed_rows(db: sqlite3.Connection, head: str, keys: Iterable[str]) -> Iterator[Any]:
    """The rows of the query ``{head} key IN (...)`` over ``keys``, asked in chunks."""
    for chunk in chunked(keys):
        yield from db.execute(f"{head} key IN ({','.join('?' * len(chunk))})", chunk)


class VerdictStore:
    """Open (creating if needed) the store at ``path``.

    ``writer=True`` takes the exclusive run lock (waiting up to ``wait_s`` seconds), unless
    the caller holds it already and hands it over (``held``: a run's folder lock, the lock
    of its store); read-only users pass ``writer=False``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        writer: bool = True,
        wait_s: float = 0.0,
        held: Held | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = contextlib.ExitStack()
        if writer and (held is None or held.key != lock_key(self.lock_path)):
            self._acquire(wait_s)
        try:
            self._db = self._connect(writer)
        except sqlite3.Error as exc:
            self._lock.close()
            raise StoreError(
                f"{self.path}: cannot be used as a verdict store ({exc}); is it a SQLite file "
                "written by gamut? Give another store, or move this file away",
                setting="store",
            ) from None
        except BaseException:
            self._lock.close()
            raise

    def _connect(self, writer: bool) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a process crash (kill -9); only an OS crash can drop
            # the last commits, which a resume then simply re-judges.
            db.execute("PRAGMA synchronous=NORMAL")
            if writer:
                db.executescript(_SCHEMA)
                db.execute(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', ?)",
                    (SCHEMA_VERSION,),
                )
            else:
                db.execute("SELECT 1 FROM verdicts LIMIT 1")
            present = {row[1] for row in db.execute("PRAGMA table_info(verdicts)")}
            for column, declaration in _ADDED.items():
                if column not in present and writer:
                    db.execute(f"ALTER TABLE verdicts ADD COLUMN {column} {declaration}")
                    present.add(column)
        except BaseException:
            db.close()
            raise
        self._present = frozenset(present)
        """The columns of this store's ``verdicts`` table (an old store read-only lacks
        the newer ones, which read as 0)."""
        self._select = ", ".join(c if c in present else f"0 AS {c}" for c in _COLUMNS)
        return db

    @property
    def lock_path(self) -> Path:
        """The writers' lock file."""
        return self.path.with_name(self.path.name + ".lock")

    def _acquire(self, wait_s: float) -> None:
        lock = hold(
            self.lock_path,
            what=str(self.path),
            wait_s=wait_s,
            setting=("wait_for_store", "store"),
            hint="wait for it to finish (wait_for_store seconds), or use another store",
        )
        try:
            self._lock.enter_context(lock)
        except LockBusy as exc:
            raise StoreBusyError(str(exc), setting=exc.settings) from None

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._lock.close()

    def __enter__(self) -> VerdictStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done(self, keys: Sequence[str]) -> set[str]:
        """The keys among ``keys`` that already have a successful verdict."""
        query = "SELECT key FROM verdicts WHERE status = 'ok' AND"
        return {row[0] for row in keyed_rows(self._db, query, keys)}

    def get(self, keys: Sequence[str]) -> dict[str, StoredVerdict]:
        """Stored rows (successful or unscored) for ``keys``."""
        query = f"SELECT {self._select} FROM verdicts WHERE"
        return {row[0]: StoredVerdict(*row) for row in keyed_rows(self._db, query, keys)}

    def put(self, rows: Iterable[StoredVerdict]) -> None:
        """Write rows in one transaction; a successful verdict replaces an unscored one,
        never the other way round."""
        rows = list(rows)
        if not rows:
            return
        with self._transaction():
            ok = [astuple(r) for r in rows if r.status == "ok"]
            unscored = [astuple(r) for r in rows if r.status != "ok"]
            self._db.executemany(_INSERT, ok)
            if unscored:
                keep = _INSERT.replace("INSERT OR REPLACE", "INSERT OR IGNORE")
                self._db.executemany(
                    "DELETE FROM verdicts WHERE key = ? AND status = 'unscored'",
                    [(r[0],) for r in unscored],
                )
                self._db.executemany(keep, unscored)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction. A full disk is an ``OSError(ENOSPC)`` naming the store (the
        command line turns it into one line saying where and what to do)."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.OperationalError):  # SQLite may have ended it
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if "disk is full" not in str(exc):
                raise
            raise OSError(errno.ENOSPC, str(exc), str(self.path)) from exc

    def usage(self, keys: Iterable[Sequence[str]]) -> tuple[int, int, int, int]:
        """Tokens the stored verdicts of ``keys`` (given in groups, e.g. per answer) cost:
        (prompt, cached prompt, prompt written to the cache, completion), summed over every
        call that produced them, re-asks included."""
        columns = ("prompt_tokens", "cached_tokens", "cache_write_tokens", "completion_tokens")
        select = ", ".join(f"COALESCE(SUM({c}), 0)" if c in self._present else "0" for c in columns)
        totals = [0, 0, 0, 0]
        for group in keys:
            for row in keyed_rows(self._db, f"SELECT {select} FROM verdicts WHERE", group):
                for i in range(4):
                    totals[i] += int(row[i])
        return totals[0], totals[1], totals[2], totals[3]

    def state(self) -> str:
        """A fingerprint of what the store holds, which any write changes (the rows, and
        the sum of the times they were written): the same state, nothing judged since."""
        count, written = self._db.execute(
            "SELECT COUNT(*), TOTAL(created_at) FROM verdicts"
        ).fetchone()
        return f"{count}:{float(written)!r}"

    def count(self) -> dict[str, int]:
        """Rows per status."""
        return dict(
            self._db.execute("SELECT status, COUNT(*) FROM verdicts GROUP BY status").fetchall()
        )


class Store(Protocol):
    """What a judge pass needs of a store."""

    def done(self, keys: Sequence[str]) -> set[str]:
        """The keys among ``keys`` that already have a successful verdict."""
        ...

    def get(self, keys: Sequence[str]) -> dict[str, StoredVerdict]:
        """Stored rows (successful or unscored) for ``keys``."""
        ...

    def put(self, rows: Iterable[StoredVerdict]) -> None:
        """Write rows; a successful verdict replaces an unscored one, never the reverse."""
        ...


class MemoryStore:
    """A ``Store`` in a dict, for passes whose verdicts need not outlive the process
    (the Inspect scorer without a store file, a dry run without one)."""

    def __init__(self) -> None:
        self._rows: dict[str, StoredVerdict] = {}

    def done(self, keys: Sequence[str]) -> set[str]:
        return {k for k in keys if (row := self._rows.get(k)) is not None and row.status == "ok"}

    def get(self, keys: Sequence[str]) -> dict[str, StoredVerdict]:
        return {k: self._rows[k] for k in keys if k in self._rows}

    def put(self, rows: Iterable[StoredVerdict]) -> None:
        for row in rows:
            old = self._rows.get(row.key)
            if row.status == "ok" or old is None or old.status != "ok":
                self._rows[row.key] = row
