"""The option table that ``--help`` reads is the one the settings models derive, and the
options built from it behave as the models say."""

from __future__ import annotations

from typing import Any

import click
import pytest

from gamut_eval.cli._option_derive import (
    REGENERATE,
    SETTINGS_MODELS,
    TABLE_FILE,
    derive_table,
    main,
    render_table,
)
from gamut_eval.cli._options import model_options, model_values, option_name, option_table
from gamut_eval.generate._settings import GenerationSettings
from gamut_eval.judge._settings import BatchSettings, JudgeSettings, RaySettings


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
