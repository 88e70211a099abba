"""``gamut judge`` as users run it (docs/reliability.md B8, C9, C13, D14): exit codes and messages,
atomic output, bad responses files rejected before any request, and kill -9 then resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from judge_helpers import (
    JUDGE,
    PANDA,
    Recorder,
    StartServer,
    Workspace,
    read_jsonl,
    response_row,
    settings,
    store_rows,
    synthetic_records,
    synthetic_responses,
    verdicts_by_check,
)

import gamut_eval.judge._pass as judge_run
from gamut_eval.cli import cli
from gamut_eval.judge import VerdictStore, judge_responses
from gamut_eval.testing import FaultRule


def judge_args(ws: Workspace, *extra: str, out: Path | None = None) -> list[str]:
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
        str(out or ws.out),
        "--concurrency",
        "4",
        "--no-probe",  # these tests count requests; the probe has tests of its own
        *extra,
    ]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def flat(text: str) -> str:
    """Output with line wraps undone (the console wraps long messages)."""
    return " ".join(text.split())


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- a normal run ---------------------------------------------------------------------------


def test_judge_writes_one_row_per_check_and_a_rerun_reads_the_store(
    serve: StartServer, small: Workspace
) -> None:
    server = serve()
    result = invoke(*judge_args(small))
    assert result.exit_code == 0, result.output
    rows = small.rows()
    assert len(rows) == small.n_checks == len(server.requests)
    assert set(rows[0]) == {
        "question_id",
        "model",
        "setting",
        "judge",
        "check_id",
        "verdict",
        "status",
        "reason",
        "explanation",
        "attempts",
    }
    assert f"{small.n_checks} verdict rows (0 from the store" in flat(result.stderr)
    again = invoke(*judge_args(small))
    assert again.exit_code == 0
    assert len(server.requests) == small.n_checks
    assert f"({small.n_checks} from the store, 0 judged now" in flat(again.stderr)


# -- B8: 401 stops the run; the CLI exits 1 naming the variable ------------------------------


def test_401_exits_1_naming_fake_api_key_and_keeps_the_previous_output(
    serve: StartServer, small: Workspace, judge_env: pytest.MonkeyPatch
) -> None:
    server = serve(api_key="sk-right")
    judge_env.setenv("FAKE_API_KEY", "sk-wrong")
    small.out.write_text("previous verdicts\n")
    result = invoke(*judge_args(small, "--concurrency", "1"))
    assert result.exit_code == 1
    message = flat(result.stderr)
    assert "error:" in message
    assert "set FAKE_API_KEY" in message
    assert "sk-wrong" not in result.output
    assert len(server.requests) == 1
    # C13: the output is replaced atomically at the end, so a failed run leaves it intact.
    assert small.out.read_text() == "previous verdicts\n"
    assert temp_files(small.root) == []


def test_a_failure_while_exporting_leaves_the_previous_output_whole(
    serve: StartServer, small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve()
    real_rows = judge_run.verdict_rows

    def rows_then_disk_full(*args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        rows = real_rows(*args, **kwargs)
        yield next(rows)
        yield next(rows)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(judge_run, "verdict_rows", rows_then_disk_full)
    small.out.write_text("previous verdicts\n")
    result = invoke(*judge_args(small))
    assert result.exit_code == 2  # one line saying where and what to do, no traceback
    assert "error: no space left on the disk" in result.output
    assert "Traceback" not in result.output
    assert small.out.read_text() == "previous verdicts\n"
    assert temp_files(small.root) == []
    assert len(store_rows(small.store)) == small.n_checks  # the verdicts themselves are kept


# -- the unscored-rate threshold -------------------------------------------------------------


def test_max_unscored_rate_fails_the_run_with_exit_1_but_writes_the_rows(
    serve: StartServer, small: Workspace
) -> None:
    serve(faults=[FaultRule("content_policy", contains="eats mostly")])  # 2 of 10 checks
    failed = invoke(*judge_args(small, "--max-unscored-rate", "0.1"))
    assert failed.exit_code == 1
    message = flat(failed.stderr)
    judge = "could not be graded by openai-api/fake/fake-judge"
    assert f"lab/alpha / multimodal: 1 of 5 checks (20.0%) {judge}" in message
    assert f"lab/beta / text_only: 1 of 5 checks (20.0%) {judge}" in message
    assert "above max_unscored_rate 0.1" in message  # the library names the setting
    assert "(option --max-unscored-rate)" in message  # the command line adds its option
    rows = small.rows()
    assert len(rows) == 10
    assert sum(r["status"] == "unscored" for r in rows) == 2

    small.out.unlink()
    passed = invoke(*judge_args(small, "--max-unscored-rate", "0.25"))
    assert passed.exit_code == 0, passed.output
    assert len(small.rows()) == 10


def test_the_unscored_limit_holds_for_each_model_and_setting_in_judge_run_and_score(
    serve: StartServer, make_workspace: Callable[..., Workspace]
) -> None:
    # 11 questions of one check, two models: the judge cannot grade model-1's answer to
    # q-0, so model-1 has 1 of 11 checks unscored (9.1%), model-0 none, the whole 1 of 22
    # (4.5%). Past a 5% limit per model and setting, though not over the whole.
    serve(faults=[FaultRule("content_policy", contains="Answer number 1 to question 0:")])
    records = synthetic_records(11, 1)
    ws = make_workspace(records, synthetic_responses(records, 2))
    named = "lab/model-1 / multimodal: 1 of 11 checks (9.1%) could not be graded by"
    for limit in ("0.02", "0.05"):
        judged = invoke(*judge_args(ws, "--max-unscored-rate", limit))
        assert judged.exit_code == 1, judged.output
        message = flat(judged.stderr)
        assert named in message
        assert "lab/model-0" not in message
        assert f"above max_unscored_rate {limit}" in message
        assert "(option --max-unscored-rate)" in message
    assert invoke(*judge_args(ws, "--max-unscored-rate", "0.1")).exit_code == 0
    rows = ws.rows()
    assert (len(rows), sum(r["verdict"] is None for r in rows)) == (22, 1)

    score = ["score", "--dataset", str(ws.dataset_path), "--verdicts", str(ws.out)]
    scores = ws.root / "scores.jsonl"
    for limit in ("0.02", "0.05"):  # the default is 0.02, as gamut judge's
        extra = ["--max-unscored-rate", limit] if limit != "0.02" else []
        refused = invoke(*score, *extra, "--out", str(scores))
        assert refused.exit_code == 1
        message = flat(refused.stderr)
        assert named in message
        assert "(option --max-unscored-rate)" in message
        assert "gamut" not in refused.stdout  # no score printed
        assert not scores.exists()
    scored = invoke(*score, "--max-unscored-rate", "0.1", "--out", str(scores))
    assert scored.exit_code == 0, scored.output
    assert len(read_jsonl(scores)) == 22 // 1  # one score row per answer

    run = ["run", "--dataset", str(ws.dataset_path), "--responses", str(ws.responses_path)]
    run += ["--judge", JUDGE, "--setting", "multimodal", "--no-probe"]
    ran = invoke(*run, "--out", str(ws.root / "run"), "--max-unscored-rate", "0.05")
    assert ran.exit_code == 1, ran.output
    assert named in flat(ran.stderr)
    assert "(option --max-unscored-rate)" in flat(ran.stderr)


# -- bad responses files: exit 2, nothing sent, nothing written ------------------------------


def test_a_torn_last_line_is_reported_and_nothing_is_sent(
    serve: StartServer, small: Workspace
) -> None:
    server = serve()
    good = "".join(json.dumps(r) + "\n" for r in small.responses)
    torn = good + '{"question_id": "q-panda", "model": "lab/gam'
    small.responses_path.write_text(torn)
    result = invoke(*judge_args(small))
    assert result.exit_code == 2
    message = flat(result.stderr)
    assert f"{small.responses_path}:line 5" in message
    assert "[torn-line]" in message
    assert server.requests == []
    assert small.responses_path.read_text() == torn  # reported, never appended after
    assert not small.out.exists()
    assert stored_rows(small.store) == 0


def test_every_bad_responses_row_is_listed_with_its_line_and_nothing_is_sent(
    serve: StartServer, make_workspace: Callable[..., Workspace]
) -> None:
    server = serve()
    rows: list[dict[str, Any]] = [
        response_row("q-panda", "lab/a", "A red panda."),
        response_row("q-nope", "lab/a", "Something."),
        response_row("q-panda", "lab/a", "A red panda.", setting="audio"),
        response_row("q-panda", "lab/a", "Again a red panda."),
        response_row("q-panda", "lab/b", "Fine."),
    ]
    ws = make_workspace([PANDA], rows)
    ws.out.write_text("old\n")
    result = invoke(*judge_args(ws))
    assert result.exit_code == 2
    message = result.stderr
    path = ws.responses_path
    assert f"{path}:2:question_id: " in message
    assert "[known-question]" in message
    assert "q-nope" in message
    assert f"{path}:3:setting: " in message
    assert "audio" in message
    assert f"{path}:4:$: same question, model and setting as line 1 [unique-response]" in message
    assert f"{path}:1:" not in message
    assert f"{path}:5:" not in message
    assert server.requests == []
    assert ws.out.read_text() == "old\n"
    assert stored_rows(ws.store) == 0


def test_bad_input_is_reported_before_the_store_is_touched(
    serve: StartServer, small: Workspace
) -> None:
    server = serve()
    small.responses_path.write_text('{"question_id": "q-panda", "mod')
    fresh = invoke(*judge_args(small))
    assert fresh.exit_code == 2
    assert not small.store.exists()
    with VerdictStore(small.store):  # another run is using the store
        busy = invoke(*judge_args(small))
    assert (busy.exit_code, "[torn-line]" in busy.stderr) == (2, True)
    assert server.requests == []


# -- C9: kill -9 mid-run, then resume --------------------------------------------------------


def stored_rows(store: Path) -> int:
    """Verdict rows in a store (0 when there is no store)."""
    return len(store_rows(store)) if store.exists() else 0


def ok_rows(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1) as db:
            count = db.execute("SELECT COUNT(*) FROM verdicts WHERE status = 'ok'").fetchone()[0]
        db.close()
    except sqlite3.Error:
        return 0  # not created yet
    return int(count)


def test_kill_9_then_resume_equals_an_uninterrupted_run_and_repeats_no_finished_work(
    serve: StartServer, make_workspace: Callable[..., Workspace]
) -> None:
    recorder = Recorder()
    serve(policy=recorder, latency_ms=20)
    records = synthetic_records(6, 4)
    ws = make_workspace(records, synthetic_responses(records, 8))
    keys = ws.key_map()
    assert ws.n_checks == 192
    command = [sys.executable, "-m", "gamut_eval", *judge_args(ws, "--max-unscored-rate", "0")]

    victim = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    try:
        deadline = time.monotonic() + 60
        while ok_rows(ws.store) < 40:
            assert victim.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        os.kill(victim.pid, signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    time.sleep(1.0)  # let the server finish (or drop) replies to the dead client

    at_kill = {key for key, row in store_rows(ws.store).items() if row[0] == "ok"}
    assert 40 <= len(at_kill) < ws.n_checks
    assert not ws.out.exists()  # the output is only written, atomically, at the end
    asked_before = set(recorder.pairs())
    assert {keys[pair] for pair in asked_before} >= at_kill

    recorder.clear()
    resumed = subprocess.run(
        command, capture_output=True, text=True, env=dict(os.environ), timeout=60
    )
    assert resumed.returncode == 0, resumed.stderr
    asked_after = Counter(keys[pair] for pair in recorder.pairs().elements())
    assert not set(asked_after) & at_kill  # zero requests for work that had completed
    assert set(asked_after.values()) == {1}
    assert set(asked_after) == set(keys.values()) - at_kill
    assert f"({len(at_kill)} from the store" in flat(resumed.stderr)

    # An uninterrupted run into a fresh store gives the same rows.
    fresh = ws.root / "fresh.jsonl"
    report = judge_responses(
        ws.dataset(), ws.responses_path, settings(), ws.root / "fresh.sqlite", fresh
    )
    assert report.unscored == 0
    resumed_rows = verdicts_by_check(ws.rows())
    assert resumed_rows == verdicts_by_check(read_jsonl(fresh))
    assert len(resumed_rows) == ws.n_checks
    assert {status for status, _ in resumed_rows.values()} == {"ok"}
    assert len({v for _, v in resumed_rows.values()}) == 3  # a real mix of verdicts
