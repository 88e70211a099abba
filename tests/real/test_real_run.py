"""`gamut run` against llama-cpp-python's server: the small model answers (text-only
setting, through Inspect AI's OpenAI-compatible provider) and grades as the judge; run.json
records what was sent; a second run reuses everything."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from real_helpers import JUDGE, SLOW_SERVER
from test_real_judge import one_answer

from gamut_eval._tables import read_rows
from gamut_eval.cli import cli


def test_the_small_model_answers_and_judges_end_to_end(llama_env: str, tmp_path: Path) -> None:
    dataset, _ = one_answer(tmp_path)
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(dataset), "--model", JUDGE, "--setting", "text_only"]
    argv += ["--judge", JUDGE, "--out", str(out), "--max-tokens", "96", "--temperature", "0"]
    argv += ["--judge-max-tokens", "160", "--max-unscored-rate", "1", "--max-connections", "1"]
    argv += SLOW_SERVER
    first = CliRunner().invoke(cli, argv)
    assert first.exit_code == 0, first.output
    answers = [row for _, row in read_rows(out / "responses.jsonl")]
    assert len(answers) == 1
    assert answers[0]["model"] == JUDGE
    assert answers[0]["response"].strip(), "the model answered"
    rows = [row for _, row in read_rows(out / "verdicts.jsonl")]
    assert rows
    assert all(r["status"] == "ok" or r["reason"] for r in rows)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["requests"][JUDGE]["structured"] == "json_object"
    assert manifest["generation"]["max_tokens"] == 96
    ok = sum(r["status"] == "ok" for r in rows)
    again = CliRunner().invoke(cli, argv)
    assert again.exit_code == 0, again.output
    assert f"({ok} reused from the store, {len(rows) - ok} judged now)" in " ".join(
        again.output.split()
    )


def test_the_text_model_refusing_an_image_is_named_before_anything_runs(
    llama_env: str, tmp_path: Path
) -> None:
    dataset, _ = one_answer(tmp_path)
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(dataset), "--model", JUDGE, "--setting", "both"]
    argv += ["--judge", "gamut/offline", "--out", str(out)]
    refused = CliRunner().invoke(cli, argv)
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.output.split())
    assert JUDGE in message
    assert "run with setting text_only" in message
    assert "--setting" in message  # the command line adds the option
    assert not out.exists()
