"""``--help`` groups options by what they are for; mistyped names get suggestions; the
shell completion script is one command away."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.cli._main import COMMANDS, GroupedCommand, option_group

SECTIONS = ("Inputs", "Models", "Judge", "Request shape", "Output", "Advanced")


def _sections(text: str) -> dict[str, list[str]]:
    """Section title -> the long options listed under it, from a ``--help`` page."""
    found: dict[str, list[str]] = {}
    title = None
    for line in text.splitlines():
        if re.fullmatch(r"[A-Z][A-Za-z ]+:", line):
            title = line[:-1]
            found[title] = []
        elif title and (match := re.match(r"  (?:-\w, )?(--[\w-]+)", line)):
            found[title].append(match.group(1))
    return found


def test_run_help_lists_its_options_in_sections() -> None:
    result = CliRunner().invoke(cli, ["run", "--help"])
    assert result.exit_code == 0
    sections = _sections(result.stdout)
    assert [s for s in sections if s in SECTIONS] == list(SECTIONS)
    assert "--responses" in sections["Inputs"]
    assert "--model" in sections["Models"]
    assert "--temperature" in sections["Models"]
    assert "--judge" in sections["Judge"]
    assert "--backend" in sections["Judge"]
    assert "--judge-temperature" in sections["Request shape"]
    assert "--out" in sections["Output"]
    assert "--dry-run" in sections["Output"]
    assert "--concurrency" in sections["Advanced"]


def _commands() -> list[tuple[str, click.Command]]:
    """Every command and subcommand, by its full name."""
    ctx = click.Context(cli)
    found: list[tuple[str, click.Command]] = []

    def walk(prefix: str, command: click.Command) -> None:
        found.append((prefix, command))
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(f"{prefix} {name}", sub)

    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        walk(name, command)
    return found


def test_every_option_of_a_grouped_page_has_a_section() -> None:
    # A new option must be given its section in OPTION_GROUPS, or it ends up alone.
    for name, command in _commands():
        if isinstance(command, click.Group):
            continue
        assert isinstance(command, GroupedCommand), name
        options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
        if len(options) < 12:
            continue
        strays = [p.opts[-1] for p in options if option_group(p) == "Other options"]
        assert strays == [], f"gamut {name}: give these a section in OPTION_GROUPS: {strays}"


def test_a_short_page_keeps_one_list() -> None:
    result = CliRunner().invoke(cli, ["validate", "--help"])
    assert "Options:" in result.stdout
    assert "Inputs:" not in result.stdout


def test_backend_help_speaks_only_of_the_backends_the_command_takes() -> None:
    run_help = CliRunner().invoke(cli, ["run", "--help"]).stdout
    judge_help = CliRunner().invoke(cli, ["judge", "--help"]).stdout
    assert "[auto|fast|inspect]" in run_help
    assert "batch:" not in run_help
    assert "ray:" not in run_help
    assert "batch:" in judge_help
    assert "ray:" in judge_help


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["rn"], "Did you mean 'run'?"),
        (["calibrat"], "Did you mean 'calibrate'"),
        (["build", "refin"], "Did you mean 'refine'?"),
        (["annotate", "user"], "Did you mean 'users'"),
    ],
)
def test_an_unknown_command_gets_the_nearest_name(args: list[str], hint: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert f"No such command {args[-1]!r}." in result.output
    assert hint in result.output


def test_an_unknown_command_far_from_any_gets_no_guess() -> None:
    result = CliRunner().invoke(cli, ["xylophone"])
    assert result.exit_code == 2
    assert "Did you mean" not in result.output


def test_a_mistyped_option_is_suggested() -> None:
    result = CliRunner().invoke(cli, ["run", "--concurency", "3"])
    assert result.exit_code == 2
    assert "'--concurrency'" in result.output


def test_a_mistyped_config_key_is_suggested(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text("concurency: 3\n")
    result = CliRunner().invoke(cli, ["judge", "--config", str(config), "--judge", "gamut/offline"])
    assert result.exit_code == 2
    assert f"{config}:concurency: not an option of this command." in result.output
    assert "Did you mean 'concurrency'" in result.output


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_shell_script(shell: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell])
    assert result.exit_code == 0
    assert "_GAMUT_COMPLETE" in result.stdout
    assert f"{shell}_complete" in result.stdout


def test_completion_completes_commands_and_options() -> None:
    runner = CliRunner()
    commands = runner.invoke(
        cli,
        [],
        prog_name="gamut",
        env={"_GAMUT_COMPLETE": "bash_complete", "COMP_WORDS": "gamut calib", "COMP_CWORD": "1"},
    )
    assert commands.stdout.split() == ["plain,calibrate", "plain,calibration-sample"]
    options = runner.invoke(
        cli,
        [],
        prog_name="gamut",
        env={
            "_GAMUT_COMPLETE": "bash_complete",
            "COMP_WORDS": "gamut run --judge-pr",
            "COMP_CWORD": "2",
        },
    )
    assert options.stdout.split() == ["plain,--judge-prompt"]
