"""An answer longer than ``long_answer_tokens`` is named when the pass reaches it, counted
at the end, and its cost shown in the dry run; it is still judged (docs/reliability.md D21)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir

CHECKS = 18
"""Checks of sample-bibimbap's checklist (the first answer's question)."""


def _answers(tmp_path: Path, chars: int) -> Path:
    lines = (sample_dir() / "responses.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows[0]["question_id"] == "sample-bibimbap"
    rows[0]["response"] = "word " * (chars // 5)
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _judge(answers: Path, *extra: str) -> str:
    args = ["judge", "--dataset", "sample", "--responses", str(answers)]
    args += ["--judge", "gamut/offline", "--long-answer-tokens", "10000", *extra]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_a_long_answer_is_warned_about_and_still_judged(tmp_path: Path) -> None:
    # 50,000 characters: 12,500 estimated tokens (4 characters a token), past 10,000.
    out = tmp_path / "v.jsonl"
    text = _judge(_answers(tmp_path, 50_000), "--out", str(out))
    assert (
        "warning: the answer to sample-bibimbap by sample/thorough (multimodal) is about "
        "12,500 tokens, more than long_answer_tokens (10,000); it is sent whole with each "
        f"of its {CHECKS} checks (about 225,000 prompt tokens)" in text
    )
    assert (
        "warning: 1 answer(s) longer than --long-answer-tokens were each sent whole with "
        "every check (about 225,000 prompt tokens in all)" in text
    )
    assert len(out.read_text().splitlines()) == 1272  # judged all the same


def test_the_dry_run_counts_the_long_answers_tokens(tmp_path: Path) -> None:
    text = _judge(_answers(tmp_path, 50_000), "--dry-run")
    assert f"of which 1 long answer(s), each sent with every check │ {12_500 * CHECKS:,} │" in text


def test_an_answer_at_the_threshold_is_not_warned_about(tmp_path: Path) -> None:
    text = _judge(_answers(tmp_path, 40_000), "--out", str(tmp_path / "v.jsonl"))
    assert "long" not in text
