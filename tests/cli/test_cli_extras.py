"""A command whose optional extra is not installed names the extra: exit 2, no traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval._extras import EXTRA_MODULES, missing_extra_message, require_extra
from gamut_eval.cli._main import cli


def test_annotate_without_the_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # None in sys.modules: the import fails (and find_spec says so) although it is installed.
    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    db = f"sqlite:///{tmp_path / 'a.sqlite'}"
    result = CliRunner().invoke(cli, ["annotate", "users", "list", "--db", db])
    assert result.exit_code == 2, result.output
    text = " ".join(result.stderr.split())
    assert text == (
        "error: gamut annotate needs the optional 'annotate' extra (fastapi, uvicorn are not "
        "installed): pip install 'gamut-eval[annotate]'"
    )
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "a.sqlite").exists()


@pytest.mark.parametrize(
    "args",
    [["annotate"], ["annotate", "serve"], ["annotate", "users", "add"], ["annotate", "export"]],
)
def test_annotate_help_works_without_the_extra(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)
    result = CliRunner().invoke(cli, [*args, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: cli " + " ".join(args) in result.stdout
    if args == ["annotate"]:
        assert "pip install 'gamut-eval[annotate]'" in result.stdout


def test_a_missing_optional_library_becomes_the_install_command() -> None:
    psycopg = ModuleNotFoundError("No module named 'psycopg'", name="psycopg")
    assert missing_extra_message(psycopg) == (
        "psycopg is not installed; it comes with the optional 'annotate' extra: "
        "pip install 'gamut-eval[annotate]'"
    )
    hub = ModuleNotFoundError(name="huggingface_hub.hf_api")
    assert missing_extra_message(hub) is not None
    assert "gamut-eval[hub]" in missing_extra_message(hub)  # type: ignore[operator]
    # A core library missing is a broken install, not an extra to suggest.
    assert missing_extra_message(ModuleNotFoundError(name="numpy")) is None


def test_the_cli_turns_a_missing_optional_import_into_exit_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def needs_ray() -> None:
        import ray  # noqa: F401

    monkeypatch.setitem(sys.modules, "ray", None)
    command = cli.command("needs-ray")(lambda: needs_ray())
    try:
        result = CliRunner().invoke(cli, ["needs-ray"])
    finally:
        cli.commands.pop(command.name or "", None)
    assert result.exit_code == 2
    assert "pip install 'gamut-eval[ray]'" in result.stderr
    assert "Traceback" not in result.output


def test_every_installed_extra_passes_its_check() -> None:
    # The dev environment has the annotate, hub and ray extras (requirements/dev.lock).
    for extra in ("annotate", "hub", "ray"):
        require_extra(extra, "this test")
    assert set(EXTRA_MODULES) >= {"annotate", "embeddings", "hub", "ray"}
