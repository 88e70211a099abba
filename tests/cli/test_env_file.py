"""`gamut` reads ./.env (or --env-file) before the command runs, never overriding a
variable already set."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gamut_eval.cli._main import cli

KEYS = ("GAMUT_TEST_FROM_ENV", "GAMUT_TEST_ALREADY_SET", "GAMUT_TEST_QUOTED")


@click.command()
def show_env() -> None:
    for key in KEYS:
        click.echo(f"{key}={os.environ.get(key, '<unset>')}")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A working folder, a command that prints the variables, and none of them set (the
    monkeypatch removes what the command line sets when the test ends)."""
    monkeypatch.setitem(cli.commands, "show-env", show_env)
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _shown(result: object) -> dict[str, str]:
    output = result.output  # type: ignore[attr-defined]
    return dict(line.split("=", 1) for line in output.splitlines())


ENV_TEXT = """# a comment
export GAMUT_TEST_FROM_ENV=from-file
GAMUT_TEST_ALREADY_SET=from-file
GAMUT_TEST_QUOTED="two words # not a comment"
"""


def test_a_dotenv_in_the_working_folder_reaches_the_command_without_overriding(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (env / ".env").write_text(ENV_TEXT)
    monkeypatch.setenv("GAMUT_TEST_ALREADY_SET", "from-shell")
    result = CliRunner().invoke(cli, ["show-env"])
    assert result.exit_code == 0, result.output
    assert _shown(result) == {
        "GAMUT_TEST_FROM_ENV": "from-file",
        "GAMUT_TEST_ALREADY_SET": "from-shell",
        "GAMUT_TEST_QUOTED": "two words # not a comment",
    }


def test_env_file_names_another_file_and_a_missing_one_is_an_error(env: Path) -> None:
    (env / ".env").write_text("GAMUT_TEST_FROM_ENV=from-dotenv\n")
    (env / "other.env").write_text("GAMUT_TEST_FROM_ENV=from-other\n")
    result = CliRunner().invoke(cli, ["--env-file", "other.env", "show-env"])
    assert result.exit_code == 0, result.output
    assert _shown(result)["GAMUT_TEST_FROM_ENV"] == "from-other"  # instead of ./.env
    missing = CliRunner().invoke(cli, ["--env-file", "missing.env", "show-env"])
    assert missing.exit_code == 2
    assert "missing.env" in missing.output


def test_without_a_dotenv_nothing_is_set(env: Path) -> None:
    result = CliRunner().invoke(cli, ["show-env"])
    assert result.exit_code == 0, result.output
    assert set(_shown(result).values()) == {"<unset>"}
