"""The generation options of `gamut run` and `gamut generate`: parsed once from
``GenerationSettings``, kept apart from the judge's options of the same field names, and
refused where they could not apply (the requests they make are tested in tests/generate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval.cli._main import cli
from gamut_eval.data import sample_dir
from gamut_eval.generate import GenerationSettings, parse_model_args

ANSWERS = str(sample_dir() / "responses.jsonl")


def _run(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "--judge", "gamut/offline", "--out", str(tmp_path / "run"), *extra]


def test_the_judge_temperature_is_not_the_answering_models(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, _run(tmp_path, "--responses", ANSWERS, "--judge-temperature", "0.5")
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["judges"][0]["temperature"] == 0.5
    assert manifest["generation"] is None  # answers given: nothing was generated
    assert manifest["identity"]["generation"] == {}


@pytest.mark.parametrize(
    "extra",
    [["--temperature", "0.2"], ["--system-message", "Be brief."], ["-M", "seed=1"]],
)
def test_generation_options_with_given_answers_are_refused(
    tmp_path: Path, extra: list[str]
) -> None:
    result = CliRunner().invoke(cli, _run(tmp_path, "--responses", ANSWERS, *extra))
    assert result.exit_code == 2, result.output
    assert "apply to generated answers" in result.output
    assert not (tmp_path / "run").exists()


def test_a_config_file_key_is_the_long_option(tmp_path: Path) -> None:
    # `temperature` is --temperature (the answering models'), not --judge-temperature
    config = tmp_path / "config.yaml"
    config.write_text("temperature: 0.7\n")
    args = _run(tmp_path, "--responses", ANSWERS, "--config", str(config))
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "apply to generated answers" in result.output


def test_a_run_with_several_epochs_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, _run(tmp_path, "--model", "mockllm/model", "--epochs", "2"))
    assert result.exit_code == 2, result.output
    assert "gamut generate --epochs" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-M", "no-equals-sign"], "expected key=value"),
        (["--reasoning-effort", "extreme"], "minimal"),
        (["--top-p", "1.5"], "--top-p"),
        (["--epochs", "0"], "epochs"),
    ],
)
def test_bad_generation_options_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    command = ["generate", "--model", "mockllm/model", "--out", str(tmp_path / "r.jsonl"), *args]
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "r.jsonl").exists()


def test_model_args_are_yaml_scalars_as_inspects() -> None:
    given = ["seed=1", "t=0.5", "flag=true", "name=x", "empty=", "a-b=two words"]
    assert parse_model_args(given) == {
        "seed": 1, "t": 0.5, "flag": True, "name": "x", "empty": "", "a_b": "two words",
    }  # fmt: skip


def test_the_recorded_settings_redact_credentials_and_the_identity_holds_changes() -> None:
    settings = GenerationSettings(temperature=0.0, model_args={"api_key": "sk-x", "seed": 3})
    recorded = settings.recorded()
    assert recorded["model_args"] == {"api_key": "<redacted>", "seed": 3}
    assert recorded["temperature"] == 0.0
    assert recorded["epochs"] == 1
    assert settings.identity() == {"temperature": 0.0, "model_args": recorded["model_args"]}
    assert GenerationSettings().identity() == {}
    assert "sk-x" not in json.dumps(recorded)
