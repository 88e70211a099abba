"""A command whose optional extra is not installed names the extra: exit 2, no traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval._extras import (
    EXTRA_MODULES,
    MissingExtra,
    missing_extra_message,
    model_extras,
    require_extra,
    require_extras,
)
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
        "installed): pip install 'gamut-eval[annotate]' (from a clone: pip install -e "
        "'.[annotate]')"
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
        "pip install 'gamut-eval[annotate]' (from a clone: pip install -e '.[annotate]')"
    )
    hub = ModuleNotFoundError(name="huggingface_hub.hf_api")
    assert missing_extra_message(hub) is not None
    assert "gamut-eval[hub]" in missing_extra_message(hub)  # type: ignore[operator]
    inspect = missing_extra_message(ModuleNotFoundError(name="inspect_ai.model"))
    assert inspect is not None
    assert inspect.startswith("inspect_ai is not installed; it comes with the optional 'inspect'")
    assert "gamut-eval[google]" in missing_extra_message(ModuleNotFoundError(name="google.genai"))  # type: ignore[operator]
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
    # The dev environment has the inspect, annotate, hub and ray extras (requirements/dev.lock).
    for extra in ("inspect", "annotate", "hub", "ray"):
        require_extra(extra, "this test")
    assert set(EXTRA_MODULES) >= {"inspect", "annotate", "embeddings", "hub", "ray"}


def test_an_inspect_model_needs_inspect_and_its_providers_sdk() -> None:
    assert model_extras("openai/gpt-4.1-mini") == ("inspect",)
    assert model_extras("vllm/Qwen/Qwen3-8B") == ("inspect",)
    assert model_extras("anthropic/claude-sonnet-4-5") == ("inspect", "anthropic")
    assert model_extras("google/gemini-2.5-pro") == ("inspect", "google")


def test_several_missing_extras_are_one_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingExtra) as caught:
        require_extras(["inspect", "anthropic", "inspect", "hub"], "answering with M")
    assert str(caught.value) == (
        "answering with M needs the optional 'inspect' and 'anthropic' extras (inspect_ai, "
        "anthropic are not installed): pip install 'gamut-eval[inspect,anthropic]' "
        "(from a clone: pip install -e '.[inspect,anthropic]')"
    )
    require_extras([], "nothing")  # nothing needed, nothing raised
