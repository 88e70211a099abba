"""Every command of the README runs as written: those that need a provider against the
fake servers (keys and base URLs point at them), the others as they are. ``make`` and
``pip`` lines are the setup the suite itself runs on."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import gamut_eval.analysis
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.testing import FakeAnthropicServer, FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
SETUP = ("make", "pip", "export")


def readme_commands() -> list[list[str]]:
    """The commands of the README's ``sh`` blocks: continuation lines joined, comments
    (two spaces and ``#``) left out."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s{2,}#", line)[0].strip()
            if line:
                commands.append(shlex.split(line))
    return commands


def _answer(request: dict[str, Any], ctx: object) -> str:
    """A judge's verdict for a judge's request, an answer for a model's."""
    system = request["messages"][0]
    if system.get("role") == "system" and "rubric check" in str(system.get("content")):
        return json.dumps({"explanation": "stated", "verdict": "meets"})
    return "A bowl of rice with vegetables, beef and a fried egg, mixed with gochujang."


@pytest.fixture
def providers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """Fake OpenAI and Anthropic endpoints behind the README's model names, and a working
    folder holding the files the README's commands name."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(sample_dir() / "responses.jsonl", tmp_path / "answers.jsonl")
    (tmp_path / "examples" / "prices").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "prices" / "prices.yaml", tmp_path / "examples" / "prices")
    with FakeOpenAIServer(policy=_answer) as openai, FakeAnthropicServer() as anthropic:
        for prefix, server in (("OPENAI", openai), ("LOCAL", openai), ("ANTHROPIC", anthropic)):
            monkeypatch.setenv(f"{prefix}_BASE_URL", server.base_url)
            monkeypatch.setenv(f"{prefix}_API_KEY", "test-key")
        opened: list[str] = []
        monkeypatch.setattr(gamut_eval.analysis, "has_browser", lambda: True)
        monkeypatch.setattr(
            gamut_eval.analysis, "open_in_browser", lambda url: opened.append(url) is None
        )
        yield openai


def test_the_readme_shows_the_two_setup_commands_and_three_typical_runs() -> None:
    commands = readme_commands()
    assert [c[:2] for c in commands if c[0] == "make"] == [["make", "demo"], ["make", "test"]]
    runs = [c for c in commands if c[:2] == ["gamut", "run"]]
    assert len(runs) >= 3
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120


def test_every_readme_command_runs_as_written(providers: FakeOpenAIServer, tmp_path: Path) -> None:
    ran = []
    for command in readme_commands():
        if command[0] in SETUP:
            continue
        if command[0] == "gamut":
            result = CliRunner().invoke(cli, command[1:], terminal_width=160)
            assert result.exit_code == 0, f"{shlex.join(command)}\n{result.output}"
        else:
            assert command[:2] == ["inspect", "eval"], shlex.join(command)
            inspect = Path(sys.executable).parent / "inspect"
            extra = ["--limit", "2", "--log-dir", str(tmp_path / "inspect-logs")]
            done = subprocess.run(
                [str(inspect), *command[1:], *extra],
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            assert list((tmp_path / "inspect-logs").glob("*.eval"))
        ran.append(command[:2])
    assert ["gamut", "run"] in ran
    assert ["inspect", "eval"] in ran
    # The runs wrote what the README says they write.
    for folder in ("runs/graded", "runs/mine", "runs/calibrated"):
        assert (tmp_path / folder / "summary.json").is_file(), folder
    assert (tmp_path / "runs/mine/report.html").is_file()  # gamut view wrote it first
    assert (tmp_path / "runs/calibrated/calibrated.json").is_file()
