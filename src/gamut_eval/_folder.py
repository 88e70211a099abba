"""A run folder belongs to one run.

``run.json`` records the run's identity (content hashes of the dataset and the answers,
the models, the setting, each judge's verdict-relevant settings, the prompt version, the
scoring parameters). Before a run touches its folder:

- an empty or new folder is claimed;
- a folder whose ``run.json`` has the same identity is the same run: it continues;
- anything else (another run, or files that are not a run) is refused with exit 2,
  naming what differs, unless ``overwrite``: then the folder's contents are removed
  first, so the new run never mixes with the old one. The verdict store is kept: it is
  a cache keyed by content hashes (judge, prompt, question, answer, check), so it cannot
  mix runs, and keeping it spares re-judging what did not change.

Derived files (``DERIVED``) are deleted before the verdicts they come from are rewritten,
so none is ever older than its data.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from gamut_eval.records import RunIdentity

__all__ = ["DERIVED", "STORE_FILES", "claim_folder", "file_sha256"]

DERIVED = ("scores.jsonl", "summary.json", "report.html", "report.md")
"""Files computed from ``verdicts.jsonl``: removed whenever it is about to change."""
STORE_FILES = ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "store.sqlite.lock")
"""The verdict store and its companions: a content-addressed cache, kept on overwrite."""
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
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


def claim_folder(folder: Path, identity: RunIdentity, *, overwrite: bool = False) -> None:
    """Make ``folder`` this run's, or raise ``InputError`` leaving it untouched."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: the run folder is a file; choose a folder", setting="out_dir")
    entries = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    if not entries:
        folder.mkdir(parents=True, exist_ok=True)
        return
    recorded = _recorded(folder)
    if recorded == identity:
        return
    if not overwrite:
        if isinstance(recorded, str):
            what = f"holds {recorded} ({', '.join(entries[:5])})"
        else:
            what = f"holds another run (it differs in: {', '.join(recorded.differences(identity))})"
        raise InputError(
            f"{folder} {what}; nothing was changed. Rerun with the same inputs to continue "
            "that run, choose another folder, or set overwrite to replace it",
            setting=("overwrite", "out_dir"),
        )
    for name in entries:
        if name in STORE_FILES:
            continue
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
