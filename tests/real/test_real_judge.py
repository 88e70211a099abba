"""`gamut judge` against llama-cpp-python's server: the probe finds the structured-output
form the server takes, every check ends with a verdict or as unscored with a reason, and a
second run reuses the store."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from real_helpers import JUDGE, SLOW_SERVER

from gamut_eval._tables import read_rows, write_rows
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir

QUESTION = "sample-espresso"


def one_answer(tmp_path: Path) -> tuple[Path, Path]:
    """A dataset of one sample question and one text-only answer to it."""
    sample = sample_dir()
    records = [r for _, r in read_rows(sample / "dataset.jsonl") if r["id"] == QUESTION]
    answers = [
        r
        for _, r in read_rows(sample / "responses.jsonl")
        if r["question_id"] == QUESTION and r["setting"] == "text_only"
    ][:1]
    dataset, responses = tmp_path / "dataset.jsonl", tmp_path / "answers.jsonl"
    for record in records:  # image paths are relative to the dataset file
        record.pop("image", None)
    write_rows(dataset, records)
    write_rows(responses, answers)
    return dataset, responses


def test_the_judge_speaks_llama_cpps_structured_output(llama_env: str, tmp_path: Path) -> None:
    dataset, responses = one_answer(tmp_path)
    out, store = tmp_path / "verdicts.jsonl", tmp_path / "store.sqlite"
    argv = ["judge", "--dataset", str(dataset), "--responses", str(responses), "--judge", JUDGE]
    argv += ["--out", str(out), "--store", str(store), "--max-unscored-rate", "1"]
    argv += ["--judge-max-tokens", "160", "--concurrency", "2", *SLOW_SERVER]
    first = CliRunner().invoke(cli, argv)
    assert first.exit_code == 0, first.output
    rows = [row for _, row in read_rows(out)]
    assert rows
    for row in rows:
        assert row["status"] in ("ok", "unscored")
        if row["status"] == "unscored":
            assert row["reason"], row
        else:
            assert row["verdict"] in ("meets", "partially_meets", "missing", "contradicts")
    ok = sum(row["status"] == "ok" for row in rows)
    assert ok >= len(rows) // 2, "the server's structured output should give valid verdicts"
    again = CliRunner().invoke(cli, argv)
    assert again.exit_code == 0, again.output
    text = " ".join(again.output.split())
    assert f"{ok} from the store" in text
    assert f"{len(rows) - ok} judged now" in text
    assert json.loads(json.dumps(rows))  # plain JSON all the way
