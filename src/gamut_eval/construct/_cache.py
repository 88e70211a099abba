"""The build cache: one SQLite table of finished units of work, keyed by a content hash.

A unit (one image's questions, one question's draft, ...) is stored when it succeeds, under
a key that hashes the stage, the model, the prompt version, the content hashes of its
inputs and the options that change its result, the way the judge's verdict store keys
verdicts. So a rerun (after a crash, or with more images) makes no model call for work
already done, a changed input or prompt is redone, and a failure is never cached: the next
run tries it again.

One writer per build folder: a run holds an exclusive ``flock`` on ``cache.sqlite.lock``,
so two runs cannot race on the same stage files or pay twice for the same calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gamut_eval.errors import GamutError

__all__ = ["BuildCache", "CacheBusyError", "CachedUnit", "content_hash", "unit_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    key TEXT PRIMARY KEY,
    stage TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    result TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
"""


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot hash a {type(value).__name__}")


def content_hash(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no spaces); models are dumped."""
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_jsonable
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unit_key(
    stage: str,
    model: str | None,
    prompt_version: str | None,
    inputs: dict[str, str],
    options: dict[str, Any],
) -> str:
    """The cache key of a unit: everything that determines its result, hashed."""
    return content_hash(
        {
            "stage": stage,
            "model": model,
            "prompt_version": prompt_version,
            "inputs": inputs,
            "options": options,
        }
    )


class CacheBusyError(GamutError):
    """Another gamut process is building in the same folder."""


@dataclass(frozen=True, slots=True)
class CachedUnit:
    """A stored unit result (the artefact as JSON)."""

    key: str
    stage: str
    unit_id: str
    result: str


class BuildCache:
    """Open (creating) the cache at ``path`` and take the folder's writer lock."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = self._acquire()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=60.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a process crash; an OS crash can lose the last
            # units, which a rerun then redoes
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            self._release()
            raise GamutError(
                f"{self.path}: cannot be used as a build cache ({exc}); move it away to start "
                "a fresh cache"
            ) from None

    def _acquire(self) -> int:
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise CacheBusyError(
                f"{self.path.parent} is in use by another gamut build (pid {holder}); wait for "
                "it to finish or use another --workdir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return fd

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def get(self, key: str) -> CachedUnit | None:
        """The stored unit for ``key``, if any."""
        row = self._db.execute(
            "SELECT key, stage, unit_id, result FROM units WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else CachedUnit(*row)

    def put(self, key: str, stage: str, unit_id: str, result: str) -> None:
        """Store a finished unit (committed at once: a crash after this loses nothing)."""
        self._db.execute(
            "INSERT OR REPLACE INTO units (key, stage, unit_id, result, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, stage, unit_id, result, time.time()),
        )

    def count(self, stage: str | None = None) -> int:
        """Stored units (of one stage, or all)."""
        if stage is None:
            return int(self._db.execute("SELECT COUNT(*) FROM units").fetchone()[0])
        query = "SELECT COUNT(*) FROM units WHERE stage = ?"
        return int(self._db.execute(query, (stage,)).fetchone()[0])

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._release()

    def __enter__(self) -> BuildCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
