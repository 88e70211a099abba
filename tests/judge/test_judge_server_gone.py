"""A judge server that dies mid-run is named: the run stops, says the server closed the
connection and how many checks are left unscored, keeps what was judged, and a rerun
against the server once it is back continues from there."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import JudgeServerGone, JudgeSettings, PassEvent, judge_responses
from gamut_eval.judge._client import JudgeCallError
from gamut_eval.testing import start_fake_server_process, stop_fake_server_process

JUDGE = "openai/gpt-4.1-mini"
KILL_AFTER = 6
"""Checks judged before the server is killed."""


def settings() -> JudgeSettings:
    # Quick backoff, so the retries that find the server gone take milliseconds.
    return JudgeSettings(
        judge=JUDGE, concurrency=4, max_retries=3, backoff_base_s=0.01, backoff_max_s=0.02
    )


def test_a_server_that_dies_mid_run_stops_it_with_the_checks_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = sample_dir()
    dataset = load_dataset(sample / "dataset.jsonl")
    responses = sample / "responses.jsonl"
    store, out = tmp_path / "store.sqlite", tmp_path / "verdicts.jsonl"
    proc, base_url = start_fake_server_process(latency_ms=20)
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def kill_when_started(event: PassEvent) -> None:
        if event.stats.judged >= KILL_AFTER and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)  # as a crash would: no goodbye
            proc.wait()

    try:
        with pytest.raises(JudgeServerGone) as caught:
            judge_responses(dataset, responses, settings(), store, out, on_event=kill_when_started)
    finally:
        stop_fake_server_process(proc)
    assert not isinstance(caught.value, JudgeCallError)  # never scored as unscored checks
    message = str(caught.value)
    assert base_url in message
    assert "closed the connection" in message
    assert not out.exists()  # no verdict table is exported from a run that stopped

    # The rerun, with the server back, judges exactly what the message said was left.
    proc, base_url = start_fake_server_process()
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    try:
        report = judge_responses(dataset, responses, settings(), store, out)
    finally:
        stop_fake_server_process(proc)
    left, planned = _left_of(message)
    assert planned == report.stats.total == report.rows
    assert report.stats.judged == left
    assert report.stats.cached == planned - left >= KILL_AFTER
    assert report.unscored == 0


def _left_of(message: str) -> tuple[int, int]:
    """(left, total) from '... N of M checks are left unscored ...'."""
    words = message.replace(",", "").split()
    at = words.index("checks")
    assert words[at - 2] == "of", message
    return int(words[at - 3]), int(words[at - 1])
