"""A model or judge whose provider SDK is not installed ends the command before any work,
with the exact install command (the dev environment has the Anthropic SDK for the build's
tests, so its absence is simulated; it has no Google SDK)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir


def test_an_answering_model_without_its_sdk_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # `import anthropic` fails
    out = tmp_path / "run"
    argv = ["run", "--model", "anthropic/claude-sonnet-4-5", "--judge", "gamut/offline"]
    result = CliRunner().invoke(cli, [*argv, "--setting", "text_only", "--out", str(out)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "pip install 'gamut-eval[anthropic]'" in text
    assert not out.exists()


@pytest.mark.skipif(importlib.util.find_spec("google.genai") is not None, reason="SDK installed")
def test_a_judge_without_its_sdk_names_the_extra(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    argv = ["judge", "--responses", str(sample_dir() / "responses.jsonl")]
    judge = ["--judge", "google/gemini-2.5-pro", "--backend", "inspect"]
    result = CliRunner().invoke(cli, [*argv, *judge, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "pip install 'gamut-eval[google]'" in " ".join(result.output.split())
    assert not out.exists()
    assert not (tmp_path / "verdicts.sqlite").exists()


def test_without_the_probe_a_missing_sdk_still_ends_the_run_before_any_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--model", "anthropic/claude-sonnet-4-5", "--judge", "gamut/offline"]
    result = CliRunner().invoke(cli, [*argv, "--no-probe", "--out", "run"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "needs the optional 'anthropic' extra (anthropic is not installed)" in text
    assert "pip install 'gamut-eval[anthropic]'" in text
    assert list(tmp_path.iterdir()) == []


def test_a_ray_judge_without_ray_leaves_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.chdir(tmp_path)
    argv = ["judge", "--responses", str(sample_dir() / "responses.jsonl")]
    judge = ["--judge", "openai/gpt-4.1-mini", "--backend", "ray"]
    result = CliRunner().invoke(cli, [*argv, *judge, "--out", "v.jsonl"])
    assert result.exit_code == 2, result.output
    assert "pip install 'gamut-eval[ray]'" in " ".join(result.output.split())
    assert list(tmp_path.iterdir()) == []  # no verdicts.sqlite in the working folder
