"""A run folder is locked before anything in it is touched, for the whole run: a second run
on it (``--overwrite`` or not, answers given or generated) is refused at once, exit 2,
naming the process that holds it, with the folder untouched; the first run then finishes
as if alone. A lock left by a killed process is taken over with a note.

Two real processes: the first ``gamut run`` is a child process; the fake judge server runs
in this process and holds every reply after the first run's probe until the test lets
go, so the first run is certainly still at work when the second starts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gamut_eval._tables import read_rows
from gamut_eval.cli._main import cli
from gamut_eval.data import sample_dir
from gamut_eval.judge import PROBE_CHECK
from gamut_eval.testing import FakeOpenAIServer, KeywordPolicy, RequestContext

SAMPLE = sample_dir()
JUDGE = "openai-api/fake/fake-judge"
HANG_GUARD_S = 120
"""How long to wait for a child before the test fails instead of hanging (not a budget)."""


class Gate:
    """The fake server's ``sleep``: the first ``free`` replies go out, the rest wait until
    ``open()``."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.calls = 0
        self.opened = threading.Event()

    async def __call__(self, seconds: float) -> None:
        self.calls += 1
        if self.calls <= self.free:
            return
        while not self.opened.is_set():
            await asyncio.sleep(0.01)

    def open(self) -> None:
        self.opened.set()


MODEL_PROBE = "Reply with the single word: ready."
"""What an answering model's probe asks (``generate._probe.PROBE_PROMPT``)."""


class Bodies:
    """The keyword judge, keeping every request body it answers."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any], ctx: RequestContext) -> str:
        self.bodies.append(request)
        return KeywordPolicy().reply(request, ctx)

    def probes(self) -> int:
        """Probes received: of a judge or of an answering model."""
        texts = [json.dumps(body["messages"]) for body in self.bodies]
        return sum(PROBE_CHECK in text or MODEL_PROBE in text for text in texts)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Bodies, Gate]]:
    gate = Gate(free=1)  # the first run's probe
    bodies = Bodies()
    server = FakeOpenAIServer(policy=bodies, latency_ms=1, sleep=gate)
    server.start()
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
    monkeypatch.setenv("FAKE_API_KEY", "unused")
    try:
        yield bodies, gate
    finally:
        gate.open()
        server.stop()


def gamut(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gamut_eval", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def wait_for(condition: object, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():  # type: ignore[operator]
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the first run never got there"
        time.sleep(0.02)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file of the folder but the verdict store (a cache the holder writes), by
    relative path, with its bytes."""
    skip = {"store.sqlite", "store.sqlite-wal", "store.sqlite-shm"}
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in skip
    }


def holder_named(text: str, pid: int) -> bool:
    flat = " ".join(text.split())
    return f"pid {pid} on {socket.gethostname()}, `python -m gamut_eval run" in flat


def finish(child: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = child.communicate(timeout=HANG_GUARD_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, err


def test_an_overwrite_of_a_folder_a_run_is_using_is_refused_and_the_run_finishes(
    tmp_path: Path, gated: tuple[FakeOpenAIServer, Gate]
) -> None:
    server, gate = gated
    out = tmp_path / "run"
    args = ["run", "--responses", str(SAMPLE / "responses.jsonl"), "--judge", JUDGE]
    first = gamut(*args, "--out", str(out))
    try:
        wait_for(lambda: gate.calls >= 2, first)  # probed, and judging (held)
        before = tree(out)
        assert {"run.json", "responses.jsonl"} <= set(before)

        second = gamut(*args, "--out", str(out), "--setting", "text_only", "--overwrite")
        code, err = finish(second)
        assert code == 2, err
        assert "the run folder" in err
        assert "is in use by another gamut process" in err
        assert holder_named(err, first.pid)
        assert "Traceback" not in err
        assert tree(out) == before  # nothing deleted, nothing written
        assert server.probes() == 1  # the first run's: the second sent not even a probe
        assert first.poll() is None
    finally:
        gate.open()
        code, err = finish(first)
    assert code == 0, err
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["setting"] == "both"
    answers = [row for _, row in read_rows(SAMPLE / "responses.jsonl")]
    written = [row for _, row in read_rows(out / "responses.jsonl")]
    assert len(written) == len(answers)
    verdicts = [row for _, row in read_rows(out / "verdicts.jsonl")]
    assert {row["setting"] for row in verdicts} == {"multimodal", "text_only"}
    assert all(row["verdict"] is not None for row in verdicts)
    scores = [row for _, row in read_rows(out / "scores.jsonl")]
    assert len(scores) == len(answers)  # one per answer and judge
    lock = out / "store.sqlite.lock"
    assert lock.read_text() == ""  # a clean exit leaves no holder behind


def test_a_second_generating_run_is_refused_before_it_generates_anything(
    tmp_path: Path, gated: tuple[FakeOpenAIServer, Gate]
) -> None:
    server, gate = gated
    out = tmp_path / "run"
    model = f"openai-api/fake/cand-{tmp_path.name}"
    args = ["run", "--model", model, "--judge", "gamut/offline", "--setting", "text_only"]
    first = gamut(*args, "--out", str(out))
    try:
        wait_for(lambda: gate.calls >= 2, first)  # probed, and generating (held)
        before = tree(out)
        second = gamut(*args, "--out", str(out))
        code, err = finish(second)
        assert code == 2, err
        assert holder_named(err, first.pid)
        assert server.probes() == 1  # the first run's: the second sent not even a probe
        assert tree(out) == before
    finally:
        gate.open()
        code, err = finish(first)
    assert code == 0, err
    rows = [row for _, row in read_rows(out / "responses.jsonl")]
    assert {row["model"] for row in rows} == {model}
    questions = len(SAMPLE.joinpath("dataset.jsonl").read_text().splitlines())
    assert len(rows) == questions  # one answer per question, in the one setting
    assert len(server.bodies) - server.probes() == questions  # each paid for once


KILLED_HOLDER = """
import sys
from gamut_eval._lock import hold
with hold(sys.argv[1], what="the run folder"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), terminal_width=200)


def started(script: str, path: Path, ready: str) -> subprocess.Popen[str]:
    """A Python child running ``script`` on ``path``, once it printed ``ready``."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == f"{ready}\n"
    return child


def killed(child: subprocess.Popen[str]) -> None:
    """``kill -9`` the child (if it still runs), and close its pipes."""
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    for stream in (child.stdin, child.stdout):
        if stream is not None:
            stream.close()


def test_a_lock_left_by_a_killed_run_is_taken_over_with_a_note(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    lock = out / "store.sqlite.lock"
    holder = started(KILLED_HOLDER, lock, "held")
    args = ["run", "--responses", str(SAMPLE / "responses.jsonl"), "--judge", "gamut/offline"]
    busy = invoke(*args, "--out", str(out))
    assert busy.exit_code == 2
    assert f"pid {holder.pid} on {socket.gethostname()}" in " ".join(busy.output.split())
    killed(holder)
    assert json.loads(lock.read_text())["pid"] == holder.pid  # its record stays behind

    result = invoke(*args, "--out", str(out))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"took over the lock left by pid {holder.pid} on {socket.gethostname()}" in text
    assert "which is no longer running" in text
    assert (out / "scores.jsonl").is_file()
    again = invoke(*args, "--out", str(out))  # a clean exit left nothing to take over
    assert again.exit_code == 0
    assert "took over" not in again.output


def test_judge_score_and_report_write_nothing_into_a_folder_a_run_holds(tmp_path: Path) -> None:
    out = tmp_path / "run"
    answers = str(SAMPLE / "responses.jsonl")
    args = ["run", "--responses", answers, "--judge", "gamut/offline", "--out", str(out)]
    assert invoke(*args).exit_code == 0
    writers = [
        ["judge", "--responses", answers, "--judge", "gamut/offline"],
        ["judge", "--responses", answers, "--judge", "gamut/offline", "--store", str(out / "s")],
        ["score", "--dataset", "sample", "--verdicts", str(out / "verdicts.jsonl")],
    ]
    outputs = [out / "verdicts.jsonl", out / "verdicts.jsonl", out / "scores.jsonl"]
    holder = started(KILLED_HOLDER, out / "store.sqlite.lock", "held")
    assert holder.stdin is not None
    try:
        before = tree(out)
        for command, target in zip(writers, outputs, strict=True):
            refused = invoke(*command, "--out", str(target))
            assert refused.exit_code == 2, (command, refused.output)
            assert f"pid {holder.pid} on " in " ".join(refused.output.split())
        report = invoke("report", str(out), "--format", "md")
        assert report.exit_code == 2, report.output
        assert f"pid {holder.pid} on " in " ".join(report.output.split())
        assert tree(out) == before
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=HANG_GUARD_S) == 0
        killed(holder)  # gone already: this only closes its pipes
    for command, target in zip(writers, outputs, strict=True):  # the run let go: they write
        assert invoke(*command, "--out", str(target)).exit_code == 0, command
    assert invoke("report", str(out), "--format", "md").exit_code == 0
    assert (out / "report.md").is_file()


# -- temporary files ---------------------------------------------------------------------

KILLED_WRITER = """
import sys
from gamut_eval._files import atomic_writer
with atomic_writer(sys.argv[1]) as handle:
    handle.write("half of it")
    handle.flush()
    print("writing", flush=True)
    sys.stdin.readline()
"""


def test_a_temporary_file_a_killed_writer_left_is_removed_by_the_next_writer(
    tmp_path: Path,
) -> None:
    from gamut_eval._files import atomic_writer

    target = tmp_path / "verdicts.jsonl"
    writer = started(KILLED_WRITER, target, "writing")
    killed(writer)
    (left,) = tmp_path.glob(".verdicts.jsonl.*.tmp")
    assert left.name.startswith(f".verdicts.jsonl.{writer.pid}.")
    assert not target.exists()
    other = tmp_path / f".other.jsonl.{writer.pid}.x.tmp"  # another file's: not this writer's
    other.write_text("")
    with atomic_writer(target) as handle:
        handle.write("whole\n")
    assert target.read_text() == "whole\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "verdicts.jsonl"]


def test_a_run_removes_the_temporary_files_an_interrupted_invocation_left(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--responses", str(SAMPLE / "responses.jsonl"), "--judge", "gamut/offline"]
    assert invoke(*args, "--out", str(out)).exit_code == 0
    left = [out / ".verdicts.jsonl.x8Rq2w.tmp", out / "logs" / ".a.eval.1.ab.tmp"]
    for path in left:
        path.write_text("half")
    result = invoke(*args, "--out", str(out))  # up to date: rewrites nothing, yet cleans
    assert result.exit_code == 0, result.output
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert "removed temporary files an interrupted run left" in " ".join(result.output.split())
