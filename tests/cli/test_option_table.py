"""The option table that ``--help`` reads is the one the settings models derive, and the
options built from it behave as the models say."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.cli._option_derive import (
    REGENERATE,
    SETTINGS_MODELS,
    TABLE_FILE,
    derive_table,
    main,
    render_table,
)
from gamut_eval.cli._options import model_options, model_values, option_name, option_table
from gamut_eval.generate import GenerationSettings
from gamut_eval.judge import BatchSettings, JudgeSettings, RaySettings


def test_the_committed_table_is_what_the_models_derive() -> None:
    derived = derive_table()
    assert option_table() == derived, f"the option table is out of date: run `{REGENERATE}`"
    text = TABLE_FILE.read_text(encoding="utf-8")
    assert text == render_table(derived), f"{TABLE_FILE.name} was edited: run `{REGENERATE}`"
    assert REGENERATE in text  # the header says how to regenerate it


def test_the_check_mode_passes_on_the_committed_table() -> None:
    assert main(["--check"]) == 0
    assert main([]) == 2


@pytest.mark.parametrize("model", [JudgeSettings, BatchSettings, RaySettings, GenerationSettings])
def test_every_command_line_field_is_in_the_table_in_field_order(model: Any) -> None:
    assert model.__name__ in SETTINGS_MODELS
    fields = [
        (name, flag)
        for name, info in model.model_fields.items()
        if (flag := option_name(name, info)) is not None
    ]
    assert [(s.name, s.flag) for s in option_table()[model.__name__]] == fields
    for spec in option_table()[model.__name__]:
        assert spec.default == model.model_fields[spec.name].default


def test_options_from_the_table_parse_and_come_back_out() -> None:
    @click.command()
    @model_options("RaySettings", exclude=["vllm_model"], choices={"engine": ["http"]})
    def command(**options: Any) -> None:
        values = model_values("RaySettings", options)
        assert not options  # all consumed
        click.echo(repr(sorted(values.items())))

    from click.testing import CliRunner

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


def test_an_unknown_model_is_named() -> None:
    with pytest.raises(KeyError, match="NoSuchSettings"):
        model_options("NoSuchSettings")


def help_text(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", ["judge", "run", "stability", "audit-judge"])
def test_every_judge_setting_is_an_option_with_the_models_default(command: str) -> None:

    text = help_text(command).split("Options:", 1)[1]
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
