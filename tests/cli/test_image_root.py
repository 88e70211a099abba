"""``--image-root DIR``: every command that takes a dataset takes the folder its images
are relative to and confined to (docs/reliability.md D22)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir

QUESTION = "sample-bibimbap"


@pytest.fixture
def split(tmp_path: Path) -> Path:
    """A dataset in data/ whose image lies in pics/, and the question's answers."""
    sample = sample_dir()
    (tmp_path / "data").mkdir()
    (tmp_path / "pics").mkdir()
    shutil.copy(sample / "images" / f"{QUESTION}.png", tmp_path / "pics")
    [record] = [
        json.loads(line)
        for line in (sample / "dataset.jsonl").read_text().splitlines()
        if json.loads(line)["id"] == QUESTION
    ]
    record["image"] = f"{QUESTION}.png"
    (tmp_path / "data" / "dataset.jsonl").write_text(json.dumps(record) + "\n")
    answers = [
        line
        for line in (sample / "responses.jsonl").read_text().splitlines()
        if json.loads(line)["question_id"] == QUESTION
    ]
    (tmp_path / "answers.jsonl").write_text("\n".join(answers) + "\n")
    return tmp_path


def _gamut(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_validate_finds_the_images_under_the_image_root(split: Path) -> None:
    dataset = split / "data" / "dataset.jsonl"
    without = _gamut("validate", dataset)
    assert without.exit_code == 2
    assert f"{dataset}:1:image: no such file relative to {split / 'data'}" in without.output
    given = _gamut("validate", dataset, "--image-root", split / "pics")
    assert given.exit_code == 0, given.output
    assert " ".join(given.output.split()).endswith("(1 questions, 18 checks)")


def test_the_image_root_confines_images_as_the_dataset_folder_does(split: Path) -> None:
    dataset = split / "data" / "dataset.jsonl"
    (split / "secret.txt").write_text("not for the judge")
    record = json.loads(dataset.read_text())
    for escape in ("../secret.txt", str(split / "secret.txt"), "../data/dataset.jsonl"):
        record["image"] = escape
        dataset.write_text(json.dumps(record) + "\n")
        result = _gamut("validate", dataset, "--image-root", split / "pics")
        assert result.exit_code == 2, escape
        assert f"{dataset}:1:image:" in result.output
    # A folder that does not exist is refused by the option itself.
    missing = _gamut("validate", dataset, "--image-root", split / "nowhere")
    assert missing.exit_code == 2
    assert "'--image-root': Directory" in missing.output


def test_judge_score_and_run_take_the_image_root(split: Path) -> None:
    dataset, root = split / "data" / "dataset.jsonl", split / "pics"
    verdicts = split / "v.jsonl"
    common = ["--dataset", dataset, "--image-root", root]
    judged = _gamut(
        "judge",
        *common,
        "--responses",
        split / "answers.jsonl",
        "--judge",
        "gamut/offline",
        "--judge-image",
        "--out",
        verdicts,
    )
    assert judged.exit_code == 0, judged.output
    assert len(verdicts.read_text().splitlines()) == 6 * 18  # 3 models x 2 settings x 18
    scores = split / "scores.jsonl"
    scored = _gamut("score", *common, "--verdicts", verdicts, "--out", scores)
    assert scored.exit_code == 0, scored.output
    assert len(scores.read_text().splitlines()) == 6
    ran = _gamut(
        "run",
        *common,
        "--responses",
        split / "answers.jsonl",
        "--judge",
        "gamut/offline",
        "--out",
        split / "run",
    )
    assert ran.exit_code == 0, ran.output
    assert len((split / "run" / "scores.jsonl").read_text().splitlines()) == 6
    # Without it, each refuses the dataset before writing anything.
    refused = _gamut(
        "judge",
        "--dataset",
        dataset,
        "--responses",
        split / "answers.jsonl",
        "--judge",
        "gamut/offline",
        "--out",
        split / "w.jsonl",
    )
    assert refused.exit_code == 2
    assert not (split / "w.jsonl").exists()
