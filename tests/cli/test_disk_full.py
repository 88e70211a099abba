"""A full disk ends a command with one line naming where and what to do, exit 2, never a
traceback; finished work is kept for the rerun (docs/reliability.md D20)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.cli._common import failure_message
from gamut_eval.judge import VerdictStore


def _sample_responses() -> str:
    from gamut_eval.data import sample_dir

    return str(sample_dir() / "responses.jsonl")


def test_sqlite_database_or_disk_is_full_at_the_store_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: VerdictStore, rows: Any) -> None:
        with self._transaction():
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(VerdictStore, "put", full)
    out = tmp_path / "out" / "verdicts.jsonl"
    args = ["judge", "--dataset", "sample", "--responses", _sample_responses()]
    result = CliRunner().invoke(cli, [*args, "--judge", "gamut/offline", "--out", str(out)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: no space left on the disk holding {out.parent} (database or disk is full): "
        "free some space there, or write to another disk, then run the same command again "
        "(finished work is kept)"
    ]
    assert "Traceback" not in result.output
    assert not out.exists()


def test_enospc_while_writing_an_output_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    real = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "out" / "verdicts.jsonl"
    args = ["judge", "--dataset", "sample", "--responses", _sample_responses()]
    result = CliRunner().invoke(cli, [*args, "--judge", "gamut/offline", "--out", str(out)])
    assert result.exit_code == 2, result.output
    [error] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert error.startswith("error: no space left on the disk (No space left on device)")
    assert "Traceback" not in result.output
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_the_messages_reach_through_wrapped_and_grouped_errors() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    try:
        try:
            raise full
        except sqlite3.OperationalError as exc:
            raise RuntimeError("while writing") from exc
    except RuntimeError as wrapped:
        message = failure_message(wrapped)
    assert message is not None
    assert message.startswith("no space left on the disk (database")
    quota = OSError(errno.EDQUOT, "Disk quota exceeded", "/data/run/store.sqlite")
    grouped = ExceptionGroup("tasks", [ValueError("x"), quota])
    assert failure_message(grouped) == (
        "no space left on the disk holding /data/run (Disk quota exceeded): free some space "
        "there, or write to another disk, then run the same command again (finished work is "
        "kept)"
    )
    assert failure_message(RecursionError()) is not None
    assert failure_message(ValueError("a bug")) is None  # a bug stays a traceback
    assert failure_message(OSError(errno.EACCES, "Permission denied")) is None
    ending = click.exceptions.Exit(1)
    ending.__context__ = quota  # raised while handling a full disk
    assert failure_message(ending) is None  # a command's own exit code stands
