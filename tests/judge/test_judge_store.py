"""The verdict store (docs/reliability.md C11, C12): only successful verdicts count as done, one
writer per store (a second one waits or refuses clearly), readers work alongside it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from judge_helpers import (
    JUDGE,
    Recorder,
    StartServer,
    Workspace,
    synthetic_records,
    synthetic_responses,
)

from gamut_eval._lock import hold
from gamut_eval.cli import cli
from gamut_eval.errors import GamutError, InputError
from gamut_eval.judge import StoreBusyError, StoredVerdict, VerdictStore


def verdict(
    key: str, status: str = "ok", value: str | None = "meets", **kw: object
) -> StoredVerdict:
    fields: dict[str, object] = {
        "key": key,
        "judge": JUDGE,
        "prompt_version": "v",
        "verdict": value if status == "ok" else None,
        "explanation": "",
        "status": status,
        "reason": None if status == "ok" else "unparseable: empty reply",
        "attempts": 1,
    }
    return StoredVerdict(**(fields | kw))  # type: ignore[arg-type]


# -- what counts as done --------------------------------------------------------------------


def test_only_ok_rows_are_done_and_an_unscored_row_never_replaces_one(tmp_path: Path) -> None:
    with VerdictStore(tmp_path / "v.sqlite") as store:
        store.put([verdict("a"), verdict("b", "unscored"), verdict("c", "unscored")])
        assert store.done(["a", "b", "c", "d"]) == {"a"}
        assert store.count() == {"ok": 1, "unscored": 2}

        store.put([verdict("a", "unscored", reason="HTTP 503")])  # a later failure...
        assert store.get(["a"])["a"].verdict == "meets"  # ...keeps the verdict
        store.put([verdict("b", value="contradicts")])  # a later success replaces unscored
        store.put([verdict("c", "unscored", reason="content policy: no")])
        rows = store.get(["a", "b", "c"])
        assert (rows["b"].status, rows["b"].verdict) == ("ok", "contradicts")
        assert (rows["c"].status, rows["c"].reason) == ("unscored", "content policy: no")
        assert store.done(["a", "b", "c"]) == {"a", "b"}
        assert store.count() == {"ok": 2, "unscored": 1}


def test_the_state_changes_with_every_write_and_with_nothing_else(tmp_path: Path) -> None:
    with VerdictStore(tmp_path / "s.sqlite") as store:
        empty = store.state()
        assert empty == "0:0.0"
        store.put([verdict("a", created_at=10.0), verdict("b", status="unscored", created_at=5.0)])
        assert store.state() == "2:15.0"  # two rows, written at 10 and 5
        store.get(["a", "b"]), store.done(["a", "b"]), store.usage([["a", "b"]])
        assert store.state() == "2:15.0"  # reading changes nothing
        store.put([verdict("a", created_at=11.0)])  # the same verdict written again
        assert store.state() == "2:16.0"
        store.put([verdict("b", created_at=7.0)])  # an unscored row judged since
        assert store.state() == "2:18.0"


def test_verdicts_survive_reopening_and_many_keys_are_looked_up(tmp_path: Path) -> None:
    keys = [f"k{i:05d}" for i in range(1234)]  # more than one IN (...) chunk
    with VerdictStore(tmp_path / "v.sqlite") as store:
        store.put(verdict(k, "ok" if i % 3 else "unscored") for i, k in enumerate(keys))
    with VerdictStore(tmp_path / "v.sqlite", writer=False) as store:
        done = store.done(keys)
        assert done == {k for i, k in enumerate(keys) if i % 3}
        assert len(store.get(keys)) == len(keys)


# -- one writer at a time -------------------------------------------------------------------


HOLDER = """
import sys
from gamut_eval.judge import StoredVerdict, VerdictStore
store = VerdictStore(sys.argv[1])
store.put([StoredVerdict("held", "j", "v", "meets", "", "ok", None, 1)])
print("ready", flush=True)
sys.stdin.readline()
store.put([StoredVerdict("later", "j", "v", "missing", "", "ok", None, 1)])
print("wrote", flush=True)
sys.stdin.readline()
store.close()
"""


def test_a_second_writer_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdin is not None
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == b"ready\n"
        with pytest.raises(StoreBusyError) as info:
            VerdictStore(path)
        message = str(info.value)
        assert str(path) in message
        assert f"pid {holder.pid} on " in message  # the holder: pid, host, command, since
        assert "wait_for_store" in message
        assert info.value.settings == ("wait_for_store", "store")  # the CLI adds the options
        assert isinstance(info.value, InputError)  # exit 2: nothing was changed
        assert "database is locked" not in message
    finally:
        holder.kill()
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()
    with VerdictStore(path) as again:  # released when its holder died
        assert again.count() == {"ok": 1}


def test_a_store_opened_under_its_lock_takes_no_lock_of_its_own(tmp_path: Path) -> None:
    # A run holds its folder's lock (the store's) for its whole life and hands it to the
    # store it opens; anyone else, in this process too, is refused.
    path = tmp_path / "v.sqlite"
    with hold(path.with_name("v.sqlite.lock"), what="the run") as held:
        with VerdictStore(path, held=held) as store:
            store.put([StoredVerdict("k", "j", "v", "meets", "", "ok", None, 1)])
            with pytest.raises(StoreBusyError):
                VerdictStore(path)
        with pytest.raises(StoreBusyError):
            VerdictStore(path)
    with VerdictStore(path) as again:
        assert again.count() == {"ok": 1}


def test_another_process_holding_the_store_refuses_or_makes_us_wait(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None
    assert holder.stdout is not None
    release: threading.Timer | None = None
    try:
        assert holder.stdout.readline() == "ready\n"
        with pytest.raises(StoreBusyError) as info:
            VerdictStore(path)
        assert f"pid {holder.pid}" in str(info.value)

        # Readers need no lock: they see what the writer committed, while it writes.
        with VerdictStore(path, writer=False) as reader:
            assert reader.done(["held", "later"]) == {"held"}
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.stdout.readline() == "wrote\n"
            assert reader.done(["held", "later"]) == {"held", "later"}

        # A writer with wait_s waits for the holder to finish, then gets the store.
        stdin = holder.stdin
        released = threading.Event()

        def let_go() -> None:
            released.set()  # before the holder can see the line, so before it lets go
            stdin.write("\n")
            stdin.flush()

        release = threading.Timer(0.4, let_go)
        release.start()
        with VerdictStore(path, wait_s=60) as store:
            assert released.is_set()  # it got the store only once the holder let go
            assert store.count() == {"ok": 2}
        assert holder.wait(timeout=60) == 0
    finally:
        if release is not None:
            release.cancel()
            release.join()
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdin.close()
        holder.stdout.close()


def test_a_writer_gives_up_after_wait_s(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    with VerdictStore(path):
        started = time.monotonic()
        with pytest.raises(StoreBusyError):
            VerdictStore(path, wait_s=0.2)
        assert 0.2 <= time.monotonic() - started < 20


NOT_A_DATABASE = b"this is not a database " * 20


def test_a_store_that_fails_to_open_releases_its_lock(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    path.write_bytes(NOT_A_DATABASE)
    with contextlib.suppress(Exception):
        VerdictStore(path)
    path.unlink()
    with VerdictStore(path) as store:
        assert store.count() == {}


def test_a_store_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    path.write_bytes(NOT_A_DATABASE)
    with pytest.raises(GamutError) as info:
        VerdictStore(path)
    assert str(path) in str(info.value)


# -- two judge runs on one store ------------------------------------------------------------


def cli_args(ws: Workspace, *extra: str) -> list[str]:
    return [
        "judge",
        "--dataset",
        str(ws.dataset_path),
        "--responses",
        str(ws.responses_path),
        "--judge",
        JUDGE,
        "--backend",
        "fast",
        "--store",
        str(ws.store),
        "--out",
        str(ws.out),
        "--max-unscored-rate",
        "1",
        "--no-probe",  # these tests count requests; the probe has tests of its own
        *extra,
    ]


def test_a_second_judge_process_on_a_busy_store_exits_2_with_the_message(
    serve: StartServer, make_workspace: Callable[..., Workspace]
) -> None:
    server = serve()
    records = synthetic_records(2, 2)
    ws = make_workspace(records, synthetic_responses(records, 2))
    with VerdictStore(ws.store):  # this process is the first run
        result = subprocess.run(
            [sys.executable, "-m", "gamut_eval", *cli_args(ws)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=60,
        )
    assert result.returncode == 2, result.stderr  # refused, nothing changed: bad input
    assert "is in use by another gamut process" in result.stderr
    assert f"pid {os.getpid()}" in result.stderr
    assert "(options --wait-for-store, --store)" in result.stderr  # the command line adds them
    assert "database is locked" not in result.stderr
    assert "Traceback" not in result.stderr
    assert server.requests == []
    assert not ws.out.exists()


def test_a_second_run_that_waits_for_the_store_sends_nothing_twice(
    serve: StartServer, make_workspace: Callable[..., Workspace]
) -> None:
    recorder = Recorder()
    serve(policy=recorder, latency_ms=20)
    records = synthetic_records(4, 4)
    ws = make_workspace(records, synthetic_responses(records, 6))  # 96 checks: about 1 s
    lock = ws.store.with_name(ws.store.name + ".lock")
    log = ws.root / "first.log"
    with log.open("w") as err:
        first = subprocess.Popen(
            [sys.executable, "-m", "gamut_eval", *cli_args(ws, "--concurrency", "2")],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=dict(os.environ),
        )
        try:
            deadline = time.monotonic() + 30
            while not (lock.exists() and f'"pid": {first.pid},' in lock.read_text()):
                assert first.poll() is None, log.read_text()
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert first.poll() is None  # the first run is still judging
            busy = CliRunner().invoke(cli, cli_args(ws))
            assert busy.exit_code == 2
            assert f"in use by another gamut process (pid {first.pid} on " in busy.stderr
            assert first.poll() is None  # so the next run has to wait for it
            waited = CliRunner().invoke(cli, cli_args(ws, "--wait-for-store", "60"))
            assert first.wait(timeout=60) == 0
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
    assert waited.exit_code == 0, waited.output
    summary = " ".join(waited.stderr.split())
    assert f"{ws.n_checks} from the store, 0 judged now" in summary
    assert recorder.pairs() == Counter(dict.fromkeys(ws.key_map(), 1))


# -- a store written before cache writes were recorded --------------------------------------

_FIRST_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE verdicts (
    key TEXT PRIMARY KEY, judge TEXT NOT NULL, prompt_version TEXT NOT NULL, verdict TEXT,
    explanation TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, attempts INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL, latency_ms REAL NOT NULL, created_at REAL NOT NULL
) WITHOUT ROWID;
INSERT INTO verdicts VALUES ('a', 'j', 'gamut-judge-v1', 'meets', '', 'ok', NULL, 1,
                             100, 20, 40, 1.0, 0.0);
"""


def test_a_store_from_before_cache_writes_reads_them_as_0_and_gains_the_column(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(_FIRST_SCHEMA)
    db.close()
    with VerdictStore(path, writer=False) as store:  # a reader changes nothing
        assert store.get(["a"])["a"].cache_write_tokens == 0
        assert store.usage([["a"]]) == (100, 40, 0, 20)
    with VerdictStore(path) as store:  # a writer adds the column
        store.put([verdict("b", prompt_tokens=300, cached_tokens=100, cache_write_tokens=150)])
        assert store.usage([["a", "b"]]) == (400, 140, 150, 20)
        assert store.get(["a"])["a"].prompt_tokens == 100
