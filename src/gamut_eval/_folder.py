"""A run folder belongs to one run.

``run.json`` records the run's identity (content hashes of the dataset and the answers,
the models, the setting, each judge's verdict-relevant settings, the prompt version, the
scoring parameters). Before a run touches its folder it checks, reading only, that the
folder can be its; then it takes the folder's lock (``lock_folder``: ``_lock.py``, held for
the whole run, generation included), so a second run on the folder, ``--overwrite`` or not,
is refused at once naming the process that holds it, and nothing is deleted before the lock
is held. Under the lock (``claim_folder``):

- an empty or new folder is claimed;
- a folder whose ``run.json`` has the same identity is the same run: it continues;
- anything else (another run, or files that are not a run) is refused with exit 2,
  naming what differs, unless ``overwrite``: then the folder's contents are removed
  first, so the new run never mixes with the old one. The verdict store is kept: it is
  a cache keyed by content hashes (judge, prompt, question, answer, check), so it cannot
  mix runs, and keeping it spares re-judging what did not change.

Temporary files that an interrupted write left (``.NAME.XXXX.tmp``, ``atomic_writer``) are
removed when the folder is claimed: the lock says no other writer is at work in it.

Derived files (``DERIVED``) are deleted before the verdicts they come from are rewritten,
so none is ever older than its data.

A run that finishes records what it finished for (``FINISHED``, ``.finished.json``): a
digest of its identity, the verdict store's state after judging and this gamut-eval's code
(its version and the names, sizes and times of its files). The record is removed when the
next invocation starts, so it is never there for outputs a crash left half made. A rerun
whose digest is the recorded one, with nothing judged and no file of it missing, has
nothing to write anew: it keeps ``verdicts.jsonl``, the derived files and the logs it wrote
as they are.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gamut_eval._files import atomic_writer
from gamut_eval._lock import RUN_LOCK, Held, hold
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from gamut_eval.records import RunIdentity

DERIVED = ("scores.jsonl", "summary.json", "report.html", "report.md")
"""Files computed from ``verdicts.jsonl``: removed whenever it is about to change."""
STORE_FILES = ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "store.sqlite.lock")
"""The verdict store and its companions: a content-addressed cache, kept on overwrite."""
FINISHED = ".finished.json"
"""What the last invocation of the run that finished finished for (see the module)."""
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks; of a dataset folder, of its meta-rubric
    files' names and hashes (what ``load_dataset`` reads from it, not the files beside)."""
    if path.is_dir():
        from gamut_eval.dataset import rubric_files

        folder = hashlib.sha256()
        for file in rubric_files(path):
            folder.update(f"{file.name}\0{file_sha256(file)}\n".encode())
        return folder.hexdigest()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _recorded(folder: Path) -> RunIdentity | str:
    """The identity in ``folder/run.json``, or why there is none to read."""
    from gamut_eval.records import RunIdentity

    path = folder / "run.json"
    if not path.is_file():
        return "files that are not a gamut run"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return RunIdentity.model_validate(data["identity"])
    except (OSError, ValueError, KeyError, TypeError):
        return "a run whose run.json records no identity (an older gamut-eval, or damaged)"


def _refuse(folder: Path, identity: RunIdentity, overwrite: bool) -> list[str]:
    """Raise ``InputError`` if ``folder`` cannot be this run's (reading only); return its
    entries (the lock file aside: a folder holding only that is empty)."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: the run folder is a file; choose a folder", setting="out_dir")
    if not folder.exists():
        return []
    entries = sorted(p.name for p in folder.iterdir() if p.name != RUN_LOCK)
    if not entries or overwrite:
        return entries
    recorded = _recorded(folder)
    if recorded == identity:
        return entries
    if isinstance(recorded, str):
        what = f"holds {recorded} ({', '.join(entries[:5])})"
    else:
        what = f"holds another run (it differs in: {', '.join(recorded.differences(identity))})"
    raise InputError(
        f"{folder} {what}; nothing was changed. Rerun with the same inputs to continue "
        "that run, choose another folder, or set overwrite to replace it",
        setting=("overwrite", "out_dir"),
    )


@contextlib.contextmanager
def lock_folder(
    folder: Path,
    identity: RunIdentity,
    *,
    overwrite: bool = False,
    wait_s: float = 0.0,
    note: Callable[[str], object] | None = None,
) -> Iterator[Held]:
    """Hold ``folder``'s lock for the block, once it is known (reading only) that the
    folder can be this run's; ``InputError`` (``LockBusy`` while another process holds it,
    naming that process) leaves it untouched. The lock is the one of the folder's verdict
    store: hand it (``Held``) to the store opened under it. Then ``claim_folder``."""
    _refuse(folder, identity, overwrite)
    folder.mkdir(parents=True, exist_ok=True)
    with hold(
        folder / RUN_LOCK,
        what=f"the run folder {folder}",
        wait_s=wait_s,
        note=note,
        hint="wait for that run to finish (or stop it; rerun with the same inputs to continue "
        "it), or choose another folder",
    ) as held:
        yield held


def claim_folder(
    folder: Path,
    identity: RunIdentity,
    *,
    overwrite: bool = False,
    note: Callable[[str], object] | None = None,
) -> None:
    """Make ``folder`` this run's, or raise ``InputError`` leaving it untouched. Called
    while ``lock_folder`` holds it: what it found is checked again, then (``overwrite``)
    the old run's files are removed, and any temporary file an interrupted write left."""
    entries = _refuse(folder, identity, overwrite)
    folder.mkdir(parents=True, exist_ok=True)
    if overwrite and _recorded(folder) != identity:
        for name in entries:
            if name in STORE_FILES:
                continue
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    stale = [p for p in folder.rglob(".*.tmp") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    if stale and note is not None:
        names = ", ".join(str(p.relative_to(folder)) for p in stale[:3])
        more = f" and {len(stale) - 3} more" if len(stale) > 3 else ""
        note(f"{folder}: removed temporary files an interrupted run left ({names}{more})")


@dataclass(frozen=True)
class Finished:
    """A finished run's record: the digest of what it was made from, and what its verdict
    file holds per judge (rows and unscored rows)."""

    digest: str
    verdicts: dict[str, tuple[int, int]]
    cells: dict[str, dict[tuple[str, str], tuple[int, int]]] = field(default_factory=dict)
    """Per judge: rows and unscored rows per (model, setting) (empty in older records)."""


def _code() -> str:
    """This gamut-eval's version and the names, sizes and modification times of its files:
    outputs that other code wrote are not taken as up to date."""
    from gamut_eval import __version__

    root = Path(__file__).parent
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        stat = path.stat()
        line = f"{path.relative_to(root).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n"
        digest.update(line.encode())
    return digest.hexdigest()


def finished_digest(identity: RunIdentity, store_state: str) -> str:
    """The digest a finished run records: its identity, the store's state, the code."""
    digest = hashlib.sha256(identity.model_dump_json().encode())
    digest.update(f"\0{store_state}\0{_code()}".encode())
    return digest.hexdigest()


def take_finished(folder: Path) -> Finished | None:
    """The record of the run's last finished invocation, removed from the folder (this
    invocation is about to change what it describes); ``None`` when there is none, or it
    cannot be read."""
    path = folder / FINISHED
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()
        verdicts = {str(k): (int(v[0]), int(v[1])) for k, v in data["verdicts"].items()}
        cells = {
            str(judge): {(str(m), str(s)): (int(n), int(u)) for m, s, n, u in rows}
            for judge, rows in data.get("cells", {}).items()
        }
        return Finished(digest=str(data["digest"]), verdicts=verdicts, cells=cells)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        path.unlink(missing_ok=True)
        return None


def record_finished(folder: Path, finished: Finished) -> None:
    """Record that the run finished (its last step)."""
    cells = {j: [[*cell, *n] for cell, n in c.items()] for j, c in finished.cells.items()}
    data = {"digest": finished.digest, "verdicts": finished.verdicts, "cells": cells}
    with atomic_writer(folder / FINISHED) as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
