"""``gamut calibrate`` and ``gamut calibration-sample`` on a synthetic run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval.calibration import sample_questions
from gamut_eval.cli._main import cli
from gamut_eval.testing import synthetic_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(
        tmp_path_factory.mktemp("run"),
        models=["m1", "m2"],
        judges=["strong", "cheap"],
        questions=40,
        settings=("multimodal",),
        checks=8,
        seed=5,
    )


def test_calibrate_writes_calibrated_json_and_prints_the_tables(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    args = ["calibrate", str(run), "--with", "strong", "--fraction", "0.25", "--seed", "2"]
    result = CliRunner().invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "cheap calibrated with strong on 10 of 40 questions" in result.output
    assert "Paired differences" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["model"], r["n_calibration"]) for r in data["rows"]] == [("m1", 10), ("m2", 10)]
    assert data["sample"] == sample_questions([f"q-{i:05d}" for i in range(40)], 0.25, seed=2)
    as_json = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "d.json"), "--json"])
    assert json.loads(as_json.stdout) == data


def test_calibrate_writes_into_the_run_folder_by_default(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "run", models=["m1"], judges=["a", "b"], questions=12, checks=4)
    result = CliRunner().invoke(
        cli, ["calibrate", str(run), "--with", "a", "--judge", "b", "--fraction", "0.5"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((run / "calibrated.json").read_text())["rows"][0]["n_calibration"] == 6


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--with", "oracle", "--fraction", "0.5"], "neither a judge of"),
        (["--with", "strong", "--fraction", "1.5"], "Invalid value for '--fraction'"),
        (["--with", "strong"], "covers every question of the run"),
        (["--with", "strong", "--judge", "nobody", "--fraction", "0.5"], "nobody: not a judge"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    run: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "c.json"
    result = CliRunner().invoke(cli, ["calibrate", str(run), *extra, "-o", str(out)])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_a_verdict_file_needs_the_dataset(run: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"question_id": "q-00000", "model": "m1", "setting": "multimodal",
                    "check_id": "c0", "verdict": "meets"}) + "\n"
    )  # fmt: skip
    result = CliRunner().invoke(cli, ["calibrate", str(run), "--with", str(labels)])
    assert result.exit_code == 2
    assert "needs the run's dataset" in result.output


def test_calibration_sample_writes_the_draw(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "to-label.txt"
    args = ["--dataset", str(run / "dataset.jsonl"), "--fraction", "0.25", "--seed", "2"]
    result = CliRunner().invoke(cli, ["calibration-sample", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    expected = sample_questions([f"q-{i:05d}" for i in range(40)], 0.25, seed=2)
    assert out.read_text().splitlines() == expected
