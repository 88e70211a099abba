"""Without a terminal, a judge pass prints plain progress lines: a start line with the
number of checks, and a last line with everything settled."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from rich.console import Console

import gamut_eval.cli._terminal as terminal_module
from gamut_eval import compile_rubric, load_dataset
from gamut_eval.data import sample_dir
from gamut_eval.judge import JudgeSettings, JudgeStats, PassEvent, judge_responses

JUDGE = "gamut/offline"


def test_a_pass_without_a_terminal_prints_progress_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = sample_dir()
    dataset = load_dataset(sample / "dataset.jsonl")
    first = (sample / "responses.jsonl").read_text(encoding="utf-8").splitlines()[0]
    responses = tmp_path / "answers.jsonl"
    responses.write_text(first + "\n", encoding="utf-8")
    question = next(r for r in dataset.records if r.id == json.loads(first)["question_id"])
    checks = len(compile_rubric(question.meta_rubric).checks)

    buffer = io.StringIO()
    monkeypatch.setattr(terminal_module, "err_console", Console(file=buffer, width=300))
    with terminal_module.PassProgress(terminal=False) as progress:
        judge_responses(
            dataset,
            responses,
            JudgeSettings(judge=JUDGE),
            tmp_path / "store.sqlite",
            tmp_path / "verdicts.jsonl",
            on_event=progress,
        )
    lines = buffer.getvalue().splitlines()
    assert lines[0] == f"judging with {JUDGE}: {checks} checks"
    assert lines[-1].startswith(f"judging with {JUDGE}: {checks}/{checks} checks (0 cached")


def test_a_long_wait_the_server_asked_for_is_shown_once(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(terminal_module, "err_console", Console(file=buffer, width=300))
    stats = JudgeStats(total=10)
    with terminal_module.PassProgress(terminal=False) as progress:
        progress(PassEvent("start", "fake", stats, label="fake"))
        stats.waiting_until, stats.waiting_for = time.time() + 42, "HTTP 429: slow down"
        progress(PassEvent("progress", "fake", stats, label="fake"))
        progress(PassEvent("progress", "fake", stats, label="fake"))  # shown once
    lines = [line for line in buffer.getvalue().splitlines() if "waiting" in line]
    assert len(lines) == 1
    assert lines[0].startswith("judging with fake: waiting 4")  # 42 s, or 41 by now
    assert "as the server asked (HTTP 429: slow down)" in lines[0]
