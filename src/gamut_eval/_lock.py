"""The one lock of what a single process may write at a time: a run folder, a verdict store.

A lock is an exclusive ``flock`` on a lock file. The operating system releases it when the
process ends, however it ends, so a lock is never left held by a process that is gone.
The file also holds a small JSON record of its holder (pid, host, command, when it took
it), for the message of whoever is refused; the holder empties it when it lets go. A
record found in a lock that nobody holds was left by a process that was killed
(``kill -9``, a crash, a power cut): it is taken over, with a note naming that process.

A run folder's lock is ``RUN_LOCK`` in the folder (the lock of the run's verdict store,
which the run also is): kept when ``--overwrite`` empties the folder, so the folder is
locked before anything in it is deleted and stays locked after.

A lock is held once, by one holder, even within a process: a run holds its folder's lock
for its whole life and hands it (``Held``) to the verdict store it opens under it, which
then takes no lock of its own; anything else that asks for it, in this process or another,
is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gamut_eval.errors import InputError

RUN_LOCK = "store.sqlite.lock"
"""A run folder's lock file (the lock of its verdict store, ``store.sqlite``)."""
_COMMAND_CHARS = 200


class LockBusy(InputError):
    """Another process holds the lock (exit 2: nothing was changed)."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) a lock."""

    pid: int
    host: str
    command: str
    started_at: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, `{self.command}`, since {self.started_at}"

    def alive(self) -> bool | None:
        """Whether the process still runs (None: it runs on another host, unknown)."""
        return process_alive(self.pid) if self.host == socket.gethostname() else None


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def _program() -> str:
    """How this process was started: ``gamut``, ``python -m gamut_eval``, a script."""
    first = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    if first.name == "__main__.py":
        return f"python -m {first.parent.name}"
    return first.name


def _me() -> Holder:
    command = " ".join([_program(), *sys.argv[1:]])
    if len(command) > _COMMAND_CHARS:
        command = command[: _COMMAND_CHARS - 3] + "..."
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return Holder(os.getpid(), socket.gethostname(), command, started)


def _read_holder(fd: int) -> Holder | str | None:
    """The record in a lock file: a holder, the raw text of an older record (a pid), or
    None when it is empty."""
    text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
        return Holder(
            int(data["pid"]), str(data["host"]), str(data["command"]), str(data["started"])
        )
    except (ValueError, KeyError, TypeError):
        return text[:80]


def _who(holder: Holder | str | None) -> str:
    if isinstance(holder, Holder):
        return holder.describe()
    return f"pid {holder}" if holder else "it has not named itself yet"


@dataclass(frozen=True)
class Held:
    """A lock this process holds (for as long as the ``hold`` block runs)."""

    key: str
    """``lock_key`` of its file."""


def lock_key(path: str | Path) -> str:
    """What names a lock file, however the path to it is spelled."""
    return os.path.realpath(path)


_HINT = "wait for it to finish (or stop it), or choose another folder"


def _take(path: Path, wait_s: float, what: str, setting: Sequence[str], hint: str) -> int:
    """Open and flock ``path`` (waiting up to ``wait_s``); return the descriptor."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                os.close(fd)
                raise
            if time.monotonic() >= deadline:
                holder = _read_holder(fd)
                os.close(fd)
                raise LockBusy(
                    f"{what} is in use by another gamut process ({_who(holder)}); nothing was "
                    f"changed: {hint}",
                    setting=setting,
                ) from None
            time.sleep(0.1)


@contextlib.contextmanager
def hold(
    path: str | Path,
    *,
    what: str,
    wait_s: float = 0.0,
    setting: str | Sequence[str] = ("wait_for_store", "out_dir"),
    note: Callable[[str], object] | None = None,
    hint: str = _HINT,
) -> Iterator[Held]:
    """Hold the lock file ``path`` for the block, or raise ``LockBusy`` (after up to
    ``wait_s`` seconds) naming the process that holds it. ``what`` names what the lock
    guards, in messages; ``note`` receives the message when a lock left by a killed
    process is taken over; ``hint`` is the way out the refusal names."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = (setting,) if isinstance(setting, str) else tuple(setting)
    fd = _take(path, wait_s, what, settings, hint)
    try:
        left = _read_holder(fd)
        me = _me()
        record = {"pid": me.pid, "host": me.host, "command": me.command, "started": me.started_at}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        if left is not None and note is not None:
            who = _who(left)
            alive = left.alive() if isinstance(left, Holder) else False
            gone = "is no longer running" if alive is False else "no longer holds it"
            note(f"{what}: took over the lock left by {who}, which {gone}")
        yield Held(lock_key(path))
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # a clean exit leaves no holder behind
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def hold_run_folder_of(path: Path | None, *, besides: Path | None = None) -> Iterator[Held | None]:
    """Hold the lock of the run folder a file or folder ``path`` is written into (its
    parent), for the block: a command writing into a run folder (``gamut judge --out``,
    ``gamut score --out``, ``gamut report``) is refused while a run holds it. A folder
    that is no run's (no lock file in it) is not locked, and gets no lock file.
    ``besides``: a lock file the caller takes itself (a verdict store's); when it is the
    folder's, it is not taken twice."""
    folder = path.parent if path is not None else None
    if folder is None or not (folder / RUN_LOCK).is_file():
        yield None
        return
    if besides is not None and lock_key(besides) == lock_key(folder / RUN_LOCK):
        yield None
        return
    with hold(folder / RUN_LOCK, what=f"the run folder {folder}", setting="out") as held:
        yield held
