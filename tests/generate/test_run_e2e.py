"""`gamut run` and `gamut demo` as a user runs them, including an interrupted run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from generate_helpers import Recorder

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import PROBE_CHECK, judge_key
from gamut_eval.testing import FakeOpenAIServer

FENCE = re.compile(r"<<<RESPONSE (\w+)>>>\n(.*)\n<<<END RESPONSE \1>>>", re.S)


def test_run_generates_judges_and_scores(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    out = tmp_path / "run"
    model = f"openai-api/fake/cand-{tmp_path.name}"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--dataset",
            str(dataset),
            "--model",
            model,
            "--judge",
            "openai-api/fake/judge",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Leaderboard" in result.stdout
    responses = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
    verdicts = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    scores = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert len(responses) == 4  # 2 questions x 2 settings
    assert len(verdicts) == 4 * 3  # 3 checks per question
    assert set(verdicts[0]) == {
        "question_id", "model", "setting", "judge", "check_id",
        "verdict", "status", "reason", "explanation", "attempts",
    }  # fmt: skip
    assert {tuple(sorted(s)) for s in scores} == {
        ("counts", "gamut", "judge", "model", "question_id", "setting", "tiers")
    }
    assert all(
        s["model"] == model and s["gamut"] == pytest.approx(1.0) for s in scores
    )  # the judge says meets
    assert len(recorder.judge_requests()) == 12
    config = json.loads((out / "run.json").read_text())
    assert config["judges"][0]["judge"] == "openai-api/fake/judge"
    assert config["judges"][0]["judge_image"] is False
    assert config["scoring"]["mu"] == -2.0
    # Rerun: nothing is generated or judged again.
    again = CliRunner().invoke(
        cli,
        [
            "run",
            "--dataset",
            str(dataset),
            "--model",
            model,
            "--judge",
            "openai-api/fake/judge",
            "--out",
            str(out),
        ],
    )
    assert again.exit_code == 0, again.output
    # nothing is generated or judged again: only each run's probes (judge, model) are new
    assert len(recorder.answers_and_checks()) == 16
    assert len(recorder.probe_requests()) == 2
    assert len(recorder.model_probe_requests()) == 2
    assert [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()] == scores


def test_demo_prints_both_leaderboards_offline(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Leaderboard") == 2
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert {(r["model"], r["setting"]) for r in summary} == {
        (m, s)
        for m in ("sample/thorough", "sample/brief", "sample/confused")
        for s in ("multimodal", "text_only")
    }
    by = {(r["model"], r["setting"]): r["gamut"] for r in summary}
    for setting in ("multimodal", "text_only"):
        assert (
            by[("sample/thorough", setting)]
            > by[("sample/brief", setting)]
            > by[("sample/confused", setting)]
        )


class _Deterministic:
    """Judge policy: a verdict that depends only on (response, check); records what it saw."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    def __call__(self, request: dict[str, Any], ctx: object) -> str:
        text = request["messages"][-1]["content"]
        response = FENCE.search(text).group(2)  # type: ignore[union-attr]
        check = text.rsplit("# Check\n", 1)[1]
        question = text.split("# Question\n", 1)[1].split("\n\n# Response\n", 1)[0]
        self.asked.append((question, response, check))
        digest = hashlib.sha256(f"{response}|{check}".encode()).digest()[0]
        time.sleep(0.002)
        return json.dumps(
            {"explanation": "x", "verdict": ["meets", "missing", "contradicts"][digest % 3]}
        )


def _stored_keys(store: Path) -> set[str]:
    try:
        with sqlite3.connect(store) as db:
            return {row[0] for row in db.execute("SELECT key FROM verdicts WHERE status = 'ok'")}
    except sqlite3.OperationalError:  # the run has created the file but not the table yet
        return set()


def _run_args(out: Path) -> list[str]:
    responses = sample_dir() / "responses.jsonl"
    return [
        sys.executable, "-m", "gamut_eval", "run", "--responses", str(responses),
        "--judge", "openai-api/fake/judge", "--concurrency", "4", "--out", str(out),
    ]  # fmt: skip


def test_killed_run_resumes_with_the_same_scores_and_no_repeated_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _Deterministic()
    with FakeOpenAIServer(policy=policy, latency_ms=20) as server:
        env = {**os.environ, "FAKE_BASE_URL": server.base_url, "FAKE_API_KEY": "k"}
        reference = tmp_path / "reference"
        subprocess.run(_run_args(reference), env=env, check=True, capture_output=True)
        total = len(policy.asked)

        out = tmp_path / "interrupted"
        proc = subprocess.Popen(
            _run_args(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            store = out / "store.sqlite"
            if store.exists() and len(_stored_keys(store)) >= 150:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)  # the server finishes handling what the dead client had in flight
        stored = _stored_keys(out / "store.sqlite")
        assert 150 <= len(stored) < total, "killed too late to test a resume"

        before = len(policy.asked)
        subprocess.run(_run_args(out), env=env, check=True, capture_output=True)
        resumed = [asked for asked in policy.asked[before:] if asked[2] != PROBE_CHECK]
        assert len(policy.asked) - before - len(resumed) == 1  # one probe, before the pass

    dataset = load_dataset(sample_dir() / "dataset.jsonl")
    records = dataset.by_id()
    rows = [json.loads(x) for x in (sample_dir() / "responses.jsonl").read_text().splitlines()]
    key_of = {}
    for row in rows:
        record = records[row["question_id"]]
        for check in dataset.checklists()[row["question_id"]].checks:
            key = judge_key(
                "openai-api/fake/judge",
                record.question_for(row["setting"]),
                row["response"],
                check.text,
            )
            question = record.question_for(row["setting"]).strip()
            key_of[(question, row["response"].strip(), check.text)] = key
    resumed_keys = [key_of[(q, r.strip(), c)] for q, r, c in resumed]
    assert not set(resumed_keys) & stored, "work finished before the kill was requested again"
    assert len(resumed_keys) == len(set(resumed_keys))
    assert set(resumed_keys) | stored == set(key_of.values())
    assert (out / "scores.jsonl").read_text() == (reference / "scores.jsonl").read_text()
