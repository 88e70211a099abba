"""`sample` stands for the bundled sample dataset in every command that reads a dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval.cli._main import cli
from gamut_eval.data import SAMPLE_ALIAS, sample_dir

OFFLINE = "gamut/offline"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the sample (its verdicts.jsonl is the sample's)."""
    out = tmp_path_factory.mktemp("demo") / "run"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _arguments(command: str, tmp: Path, run: Path) -> list[str]:
    answers = str(sample_dir() / "responses.jsonl")
    verdicts = str(run / "verdicts.jsonl")
    return {
        "validate": ["validate", SAMPLE_ALIAS],
        "compile": ["compile", SAMPLE_ALIAS, "-o", str(tmp / "checklists.jsonl")],
        "judge": ["judge", "--dataset", SAMPLE_ALIAS, "--responses", answers,
                  "--judge", OFFLINE, "--out", str(tmp / "verdicts.jsonl")],
        "run": ["run", "--dataset", SAMPLE_ALIAS, "--responses", answers,
                "--judge", OFFLINE, "--out", str(tmp / "run")],
        "score": ["score", "--dataset", SAMPLE_ALIAS, "--verdicts", verdicts, "--json"],
        "report": ["report", str(run), "--dataset", SAMPLE_ALIAS, "--format", "json",
                   "-o", str(tmp / "report.json")],
        "agreement": ["agreement", "--dataset", SAMPLE_ALIAS, "--verdicts", verdicts,
                      "--judge", OFFLINE, "--resamples", "10", "--json"],
        "stability": ["stability", "--dataset", SAMPLE_ALIAS, "--judge", OFFLINE,
                      "--repeats", "2", "--json"],
        "audit-judge": ["audit-judge", "--dataset", SAMPLE_ALIAS, "--judge", OFFLINE, "--json"],
        "annotate import": ["annotate", "import", SAMPLE_ALIAS, "--db", str(tmp / "a.sqlite")],
    }[command]  # fmt: skip


COMMANDS_WITH_A_DATASET = [
    "validate", "compile", "judge", "run", "score", "report",
    "agreement", "stability", "audit-judge", "annotate import",
]  # fmt: skip
"""Every command that reads a dataset (``generate`` shares ``run``'s --dataset option;
``build`` makes datasets and reads none)."""


@pytest.mark.parametrize("command", COMMANDS_WITH_A_DATASET)
def test_the_sample_alias_is_accepted(
    command: str, tmp_path: Path, demo_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no file named `sample` here: the alias, not a path
    result = CliRunner().invoke(cli, _arguments(command, tmp_path, demo_run))
    assert result.exit_code == 0, result.output
