"""The core install grades: validate, compile, judge offline, score, run and report work
with Inspect AI, the OpenAI SDK, SciPy, scikit-learn and the web frameworks unimportable,
and every command that needs an extra says which before it writes anything.

Each command runs in a fresh interpreter whose first import finder refuses the libraries
of the extras (as if they were not installed); the working folder is a temporary one, so
"nothing left behind" is that folder still empty."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gamut_eval.data import sample_dir

ROOT = Path(__file__).resolve().parents[2]
SRC = str(ROOT / "src")
EXTRAS_ONLY = ("inspect_ai", "openai", "mmh3", "anthropic", "sklearn", "scipy", "fastapi",
               "uvicorn", "starlette", "ray", "huggingface_hub", "textual", "boto3")  # fmt: skip
"""Libraries the core install does not bring: none of them may be needed to grade."""

_LEAN = """
import sys
BLOCKED = set(sys.argv[1].split(","))
for name in [m for m in sys.modules if m.partition(".")[0] in BLOCKED]:
    del sys.modules[name]

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from gamut_eval.cli import main
main(sys.argv[2:])
"""


def gamut(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gamut ARGS`` in ``cwd`` as the core install runs it."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=SRC, COLUMNS="200", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-c", _LEAN, ",".join(EXTRAS_ONLY), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
def test_grading_needs_no_extra(tmp_path: Path) -> None:
    sample = sample_dir()
    rubric = str(ROOT / "examples" / "dish_bibimbap.yaml")
    validated = gamut(tmp_path, "validate", rubric)
    assert validated.returncode == 0, validated.stderr
    assert "36 checks" in validated.stdout
    compiled = gamut(tmp_path, "compile", rubric, "-o", "checklist.json")
    assert compiled.returncode == 0, compiled.stderr
    assert (tmp_path / "checklist.json").stat().st_size > 0

    judge = ["judge", "--dataset", "sample", "--responses", str(sample / "responses.jsonl")]
    judged = gamut(tmp_path, *judge, "--judge", "gamut/offline", "--out", "v.jsonl")
    assert judged.returncode == 0, judged.stderr
    # 12 questions x 3 models x 2 settings, each with all of its question's checks.
    assert "1272 verdict rows" in one_line(judged.stderr)
    assert len((tmp_path / "v.jsonl").read_text().splitlines()) == 1272
    scored = gamut(tmp_path, "score", "--dataset", "sample", "--verdicts", "v.jsonl")
    assert scored.returncode == 0, scored.stderr
    assert "sample/thorough" in scored.stdout

    run = ["run", "--responses", str(sample / "responses.jsonl"), "--judge", "gamut/offline"]
    ran = gamut(tmp_path, *run, "--out", "run")
    assert ran.returncode == 0, ran.stderr
    assert len((tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()) == 1272
    assert not (tmp_path / "run" / "logs").exists()
    said = [line for line in ran.stderr.splitlines() if "Inspect logs" in line]
    assert said == [
        "no Inspect logs (inspect view): they need the optional 'inspect' extra: "
        "pip install 'gamut-eval[inspect]' (from a clone: pip install -e '.[inspect]')"
    ]
    reported = gamut(tmp_path, "report", "run", "--format", "md", "-o", "-")
    assert reported.returncode == 0, reported.stderr
    assert "Question diversity" in reported.stdout  # NumPy's, in the core


SAMPLE_ANSWERS = str(sample_dir() / "responses.jsonl")
NEEDS_AN_EXTRA = {
    "run-model": (
        ["run", "--model", "openai/gpt-4.1-mini", "--judge", "gamut/offline", "--out", "r"],
        "inspect",
    ),
    "run-no-probe-anthropic": (
        ["run", "--model", "anthropic/claude-sonnet-4-5", "--judge", "gamut/offline",
         "--out", "r", "--no-probe"],
        "inspect,anthropic",
    ),
    "run-inspect-judge": (
        ["run", "--responses", SAMPLE_ANSWERS, "--judge", "openai/gpt-4.1-mini",
         "--backend", "inspect", "--out", "r", "--no-probe"],
        "inspect",
    ),
    "generate": (["generate", "--model", "openai/gpt-4.1-mini", "--out", "g.jsonl"], "inspect"),
    "judge-inspect": (
        ["judge", "--responses", SAMPLE_ANSWERS, "--judge", "openai/gpt-4.1-mini",
         "--backend", "inspect", "--out", "v.jsonl"],
        "inspect",
    ),
    "judge-ray": (
        ["judge", "--responses", SAMPLE_ANSWERS, "--judge", "openai/gpt-4.1-mini",
         "--backend", "ray", "--out", "v.jsonl"],
        "ray",
    ),
    "stability-inspect": (
        ["stability", "--responses", SAMPLE_ANSWERS, "--judge", "openai/gpt-4.1-mini",
         "--backend", "inspect", "--repeats", "2", "--store-dir", "stores"],
        "inspect",
    ),
    "audit-judge-ray": (
        ["audit-judge", "--responses", SAMPLE_ANSWERS, "--judge", "openai/gpt-4.1-mini",
         "--backend", "ray", "--store-dir", "stores"],
        "ray",
    ),
    "build": (
        ["build", "questions", "--images", str(ROOT / "sample"), "--model",
         "openai/gpt-4.1-mini", "--workdir", "work"],
        "inspect",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NEEDS_AN_EXTRA))
def test_a_command_needing_an_extra_names_it_and_writes_nothing(tmp_path: Path, case: str) -> None:
    argv, extras = NEEDS_AN_EXTRA[case]
    result = gamut(tmp_path, *argv)
    assert result.returncode == 2, result.stderr
    text = one_line(result.stderr)
    assert text.startswith("error: "), text
    assert f"pip install 'gamut-eval[{extras}]'" in text
    assert f"pip install -e '.[{extras}]'" in text
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _pinned(lock: Path) -> set[str]:
    names = re.findall(r"^([A-Za-z0-9._-]+)==", lock.read_text(), flags=re.MULTILINE)
    return {n.lower().replace("_", "-") for n in names}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_core_lock_holds_no_extra() -> None:
    core = _pinned(ROOT / "requirements" / "main.lock")
    heavy = {"fastapi", "uvicorn", "starlette", "scipy", "scikit-learn", "inspect-ai",
             "openai", "textual", "boto3", "s3fs", "debugpy", "torch", "ray"}  # fmt: skip
    assert core & heavy == set()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {_name(r) for r in project["dependencies"]} <= core
    # The inspect extra's lock is the core's pins plus Inspect AI's.
    inspect = _pinned(ROOT / "requirements" / "inspect.lock")
    assert {_name(r) for r in project["optional-dependencies"]["inspect"]} <= inspect
    assert core <= inspect
