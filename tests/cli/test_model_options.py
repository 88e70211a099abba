"""The options derived from the settings models: one per field, with the model's default,
bounds and help; values come back out by field; a config file sets them, flags win."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.cli._options import config_option, model_options, model_values, option_name
from gamut_eval.generate import GenerationSettings
from gamut_eval.judge import BatchSettings, JudgeSettings, RaySettings

MODELS = [JudgeSettings, BatchSettings, RaySettings, GenerationSettings]


def command_line_fields(model: Any) -> list[tuple[str, str]]:
    return [
        (name, flag)
        for name, info in model.model_fields.items()
        if (flag := option_name(name, info)) is not None
    ]


@pytest.mark.parametrize("model", MODELS)
def test_every_field_is_an_option_with_the_models_default_in_field_order(model: Any) -> None:
    @click.command()
    @model_options(model)
    def command(**options: Any) -> None:
        pass

    options = [p for p in command.params if isinstance(p, click.Option)]
    assert [(p.name, p.opts[0]) for p in options] == command_line_fields(model)
    for param in options:
        info = model.model_fields[param.name]
        default = info.get_default(call_default_factory=True)
        assert param.default == (None if default == () else default), param.name
        assert param.help == (info.description or "").replace("\n", " ")


def test_bools_are_on_off_flags_and_literals_are_choices() -> None:
    @click.command()
    @model_options(JudgeSettings)
    def command(**options: Any) -> None:
        pass

    params = {p.name: p for p in command.params}
    backend = params["backend"]
    assert isinstance(backend.type, click.Choice)
    assert list(backend.type.choices) == ["auto", "fast", "inspect", "batch", "ray"]
    assert params["concurrency"].type.min == 1  # type: ignore[attr-defined]
    assert params["concurrency"].type.max == 4096  # type: ignore[attr-defined]
    flags = [p for p in command.params if isinstance(p, click.Option) and p.secondary_opts]
    assert flags
    assert all(p.secondary_opts[0].startswith("--no-") for p in flags)


def test_options_parse_and_come_back_out() -> None:
    @click.command()
    @model_options(RaySettings, exclude=["vllm_model"], choices={"engine": ["http"]})
    def command(**options: Any) -> None:
        values = model_values(RaySettings, options)
        assert not options  # all consumed
        click.echo(repr(sorted(values.items())))

    args = ["--ray-endpoint", "http://a", "--ray-endpoint", "http://b", "--ray-workers", "3"]
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 0, result.output
    # a default shown in --help comes back too; an unset optional or repeat does not
    assert result.output.strip() == repr(
        [
            ("endpoints", ("http://a", "http://b")),
            ("engine", "http"),
            ("vllm_tensor_parallel", 1),
            ("workers", 3),
        ]
    )
    assert CliRunner().invoke(command, ["--ray-engine", "vllm"]).exit_code == 2
    assert CliRunner().invoke(command, ["--ray-vllm-model", "m"]).exit_code == 2
    assert CliRunner().invoke(command, ["--ray-workers", "0"]).exit_code == 2


def test_a_prefix_keeps_two_models_apart() -> None:
    @click.command()
    @model_options(GenerationSettings, prefix="generation_")
    def command(**options: Any) -> None:
        values = model_values(GenerationSettings, options, prefix="generation_")
        click.echo(repr((values.get("temperature"), sorted(options))))

    result = CliRunner().invoke(command, ["--temperature", "0.25"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == repr((0.25, []))


def test_a_config_file_sets_defaults_and_flags_win_over_it(tmp_path: Path) -> None:
    @click.command()
    @config_option
    @model_options(JudgeSettings)
    def command(**options: Any) -> None:
        values = model_values(JudgeSettings, options)
        click.echo(repr((values["concurrency"], values["max_retries"], values["timeout_s"])))

    config = tmp_path / "judge.yaml"
    config.write_text("concurrency: 3\nmax_retries: 2\ntimeout: 9\n")
    result = CliRunner().invoke(command, ["--config", str(config), "--concurrency", "7"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == repr((7, 2, 9.0))  # flag > file > model
    default = JudgeSettings.model_fields["timeout_s"].default
    result = CliRunner().invoke(command, [])
    assert result.output.strip() == repr((64, 6, default))
    config.write_text("no_such_option: 1\n")
    result = CliRunner().invoke(command, ["--config", str(config)])
    assert result.exit_code != 0
    assert "no_such_option" in str(result.exception) + result.output


def help_text(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", ["judge", "run", "stability", "audit-judge"])
def test_every_judge_setting_is_an_option_with_the_models_default(command: str) -> None:
    text = re.split(r" (?:Options|Inputs): ", help_text(command), maxsplit=1)[1]
    for name, info in JudgeSettings.model_fields.items():
        flag = option_name(name, info)
        if flag is None:
            continue
        assert flag in text, f"{command}: {flag} missing"
        if info.default not in (None, False, True):
            segment = text.split(flag, 1)[1].split(" --", 1)[0]
            shown = re.search(rf"\[default: {re.escape(str(info.default))}[;\]]", segment)
            assert shown, f"{command}: {flag} shows no default {info.default}"


def test_the_cli_knows_every_annotation_role() -> None:
    from gamut_eval.annotate import Role
    from gamut_eval.cli._annotate import _ROLES

    assert tuple(role.value for role in Role) == _ROLES


def test_the_default_embedding_model_is_the_analysis_one() -> None:
    from gamut_eval.analysis import DEFAULT_EMBEDDING_MODEL
    from gamut_eval.cli._report import _DEFAULT_EMBEDDINGS

    assert _DEFAULT_EMBEDDINGS == DEFAULT_EMBEDDING_MODEL
