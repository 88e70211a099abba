"""Start-up: ``gamut --help`` lists every command without importing the command modules,
and the commands kept lazy do not import the heavy libraries for ``--help``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from gamut_eval.cli._main import COMMANDS, cli

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = ("pandas", "numpy", "pyarrow", "aiohttp", "inspect_ai", "fastapi", "sqlalchemy")
LIBRARY = (
    "gamut_eval.analysis",
    "gamut_eval.annotate",
    "gamut_eval.construct",
    "gamut_eval.judge",
    "gamut_eval.scoring",
)
MACHINERY = (
    "gamut_eval.analysis",
    "gamut_eval.annotate",
    "gamut_eval.judge._backend_",
    "gamut_eval.judge._client_",
    "gamut_eval.judge._pass",
    "gamut_eval.run",
    "gamut_eval.generate",
    "gamut_eval.quality",
)
MODEL_MACHINERY = ("pydantic.main", "pydantic._internal._model_construction", "pydantic.fields")
"""What building any pydantic model imports (~100 ms)."""
SETTINGS_COMMANDS = {"judge", "run", "generate", "demo", "agreement", "stability", "audit-judge"}
"""The commands whose options are read from settings models (``model_fields``): their
``--help`` imports pydantic and the settings modules, and nothing more of the library."""
SETTINGS_MODULES = {"gamut_eval.judge._settings", "gamut_eval.generate._settings"}

_PROBE = """
import json, sys
from gamut_eval.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("\\n@@MODULES@@" + json.dumps([code, sorted(sys.modules)]))
"""


def _help(*args: str) -> tuple[str, set[str]]:
    """The help text and the modules imported, from a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *args, "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
    )
    text, _, tail = result.stdout.rpartition("\n@@MODULES@@")
    code, modules = json.loads(tail)
    assert code in (0, None), result.stderr
    return text, set(modules)


def test_group_help_lists_every_command_without_importing_them() -> None:
    text, modules = _help()
    section = text.split("Commands:", 1)[1].splitlines()
    listed = [line.split()[0] for line in section if line.startswith("  ") and line.strip()]
    assert listed == sorted(COMMANDS)
    assert not [m for m in modules if m.split(".")[0] in HEAVY]
    assert not [m for m in modules if m.startswith(LIBRARY)]
    command_modules = {m for m in modules if m.startswith("gamut_eval.cli._")}
    assert command_modules <= {"gamut_eval.cli._main"}
    assert "gamut_eval.rubric" not in modules  # not even the pydantic models


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_lazy_commands_help_imports_no_heavy_library(command: str) -> None:
    text, modules = _help(command)
    assert f"Usage: gamut {command}" in text
    assert not [m for m in modules if m.split(".")[0] in HEAVY]
    settings = {m for m in modules if m in SETTINGS_MODULES}
    packages = {m.rsplit(".", 1)[0] for m in settings}  # their faces, which load nothing more
    assert not [m for m in modules - settings - packages if m.startswith(MACHINERY)]
    assert "gamut_eval.rubric" not in modules
    assert "rich.console" not in modules  # the consoles are made on first use
    if command in SETTINGS_COMMANDS:
        assert settings  # the options are the models' fields
        return
    # no settings model, no pydantic: it is imported when the command runs (even
    # ``import pydantic`` costs ~25 ms)
    assert not [m for m in MODEL_MACHINERY if m in modules]
    assert not [m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core")]
    assert not settings


def test_a_command_imports_only_its_own_module() -> None:
    _, modules = _help("validate")
    assert {m for m in modules if m.startswith("gamut_eval.cli._")} <= {
        "gamut_eval.cli._main",
        "gamut_eval.cli._common",
        "gamut_eval.cli._rubric",
    }


def test_the_table_names_each_command_and_its_own_help_line() -> None:
    """A command's one-line help in ``gamut --help`` is the one its docstring gives."""
    for name, spec in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command), name
        assert command.name == name
        limit = 300
        own = command.get_short_help_str(limit)
        assert click.Command(name, help=spec.help).get_short_help_str(limit) == own, name


def test_every_command_module_is_in_the_table() -> None:
    """A module that defines commands (its ``COMMANDS`` list) has each of them registered."""
    cli_dir = Path(SRC) / "gamut_eval" / "cli"
    registered = {(spec.module, spec.attribute) for spec in COMMANDS.values()}
    import importlib

    for path in sorted(cli_dir.glob("_*.py")):
        if path.stem in ("_main", "__init__"):
            continue
        module = importlib.import_module(f"gamut_eval.cli.{path.stem}")
        for command in getattr(module, "COMMANDS", []):
            attribute = next(a for a, v in vars(module).items() if v is command)
            assert (module.__name__, attribute) in registered, (module.__name__, attribute)


def test_unknown_command_is_a_usage_error() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_report_formats_match_the_analysis_package() -> None:
    from gamut_eval.analysis import FORMATS
    from gamut_eval.cli._report import _FORMATS

    assert _FORMATS == FORMATS


def test_importing_the_package_is_cheap() -> None:
    script = "import sys, json, gamut_eval; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    modules = set(json.loads(out))
    assert not [m for m in modules if m.split(".")[0] in (*HEAVY, "pydantic", "yaml")]
    assert {m for m in modules if m.startswith("gamut_eval")} == {
        "gamut_eval",
        "gamut_eval._lazy",
        "gamut_eval.errors",
    }
