"""Calibrated scores of a run folder: the estimator on per-question scores, the sample drawn
from the seed, a strong judge of the run or a verdict file, calibrated.json, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gamut_eval._verdict_table import read_verdict_table
from gamut_eval.calibration import (
    GIVEN_NOTE,
    RANDOM_NOTE,
    calibrate_run,
    calibrate_scores,
    normal_cdf,
    ppi_mean,
    sample_questions,
    write_calibration,
)
from gamut_eval.errors import InputError
from gamut_eval.records import load_run
from gamut_eval.testing import synthetic_run

MODELS = ["m1", "m2", "m3"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(
        tmp_path_factory.mktemp("run"),
        models=MODELS,
        judges=["strong", "cheap"],
        questions=200,
        settings=("multimodal",),
        checks=12,
        seed=3,
    )


def _by_question(run: Path, judge: str, model: str) -> pd.Series:
    scores = load_run(run).scores
    rows = scores[(scores["judge"] == judge) & (scores["model"] == model)]
    return rows.set_index("question_id")["gamut"].sort_index()


def test_the_rows_are_the_estimator_on_per_question_scores(run: Path) -> None:
    result = calibrate_run(run, "strong", judge="cheap", fraction=0.25, seed=1)
    questions = sorted(load_run(run).scores["question_id"].unique())
    assert result.sample == sample_questions(questions, 0.25, seed=1)
    assert len(result.sample) == 50
    assert result.n_questions == 200
    sampled = np.isin(questions, result.sample)
    for row in result.rows.itertuples():
        strong = _by_question(run, "strong", str(row.model)).to_numpy()
        cheap = _by_question(run, "cheap", str(row.model)).to_numpy()
        expected = ppi_mean(strong[sampled], cheap[sampled], cheap[~sampled])
        assert row.gamut == pytest.approx(float(expected.estimate))
        assert row.ci_low == pytest.approx(float(expected.ci_low))
        assert row.n_answers == 200
        assert row.n_calibration == 50
        assert row.naive_judge == pytest.approx(np.nanmean(cheap))
        assert row.naive_calibrated_with == pytest.approx(np.nanmean(strong[sampled]))
        # The strong judge's full-run score lies in the interval; the cheap judge's does not.
        assert row.ci_low <= np.nanmean(strong) <= row.ci_high
        assert not row.ci_low <= np.nanmean(cheap) <= row.ci_high
        assert 0 < row.width_ratio < 1
        for tier in ("answer_critical", "valuable", "context"):
            assert result.rows.columns.str.startswith(tier).sum() == 4
    assert list(result.rows["judge"].unique()) == ["cheap"]
    assert list(result.rows["calibrated_with"].unique()) == ["strong"]


def test_paired_differences_use_the_same_questions(run: Path) -> None:
    result = calibrate_run(run, "strong", judge="cheap", fraction=0.25, seed=1)
    assert [(r.model_a, r.model_b) for r in result.differences.itertuples()] == [
        ("m1", "m2"),
        ("m1", "m3"),
        ("m2", "m3"),
    ]
    questions = sorted(load_run(run).scores["question_id"].unique())
    sampled = np.isin(questions, result.sample)
    first = result.differences.iloc[0]
    strong = (_by_question(run, "strong", "m1") - _by_question(run, "strong", "m2")).to_numpy()
    cheap = (_by_question(run, "cheap", "m1") - _by_question(run, "cheap", "m2")).to_numpy()
    expected = ppi_mean(strong[sampled], cheap[sampled], cheap[~sampled])
    assert first["difference"] == pytest.approx(float(expected.estimate))
    assert first["standard_error"] == pytest.approx(float(expected.standard_error))
    z = float(expected.estimate) / float(expected.standard_error)
    assert first["p_sign_right"] == pytest.approx(float(normal_cdf([abs(z)])[0]))


def test_calibrated_json_has_a_row_per_model_and_setting(run: Path, tmp_path: Path) -> None:
    result = calibrate_run(run, "strong", judge="cheap", fraction=0.25, seed=1)
    path = write_calibration(result, tmp_path)
    assert path == tmp_path / "calibrated.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["fraction"], data["seed"], data["confidence"]) == (0.25, 1, 0.95)
    assert len(data["rows"]) == 3
    assert len(data["differences"]) == 3
    required = {"model", "setting", "judge", "calibrated_with", "gamut", "ci_low", "ci_high"}
    for row in data["rows"]:
        assert required | {"n_answers", "n_calibration"} <= set(row)
        assert isinstance(row["n_calibration"], int)


def _labels(run: Path, questions: list[str], path: Path) -> Path:
    """The strong judge's verdict rows of some questions, as people's labels would be."""
    frame = read_verdict_table(run / "verdicts.jsonl").frame
    frame = frame[(frame["judge"] == "strong") & frame["question_id"].isin(questions)]
    with path.open("w", encoding="utf-8") as handle:
        for record in frame.drop(columns=["judge"]).astype(object).to_dict(orient="records"):
            handle.write(json.dumps({k: (None if pd.isna(v) else v) for k, v in record.items()}))
            handle.write("\n")
    return path


def test_a_verdict_file_gives_what_the_judge_gives(run: Path, tmp_path: Path) -> None:
    by_judge = calibrate_run(run, "strong", judge="cheap", fraction=0.25, seed=1)
    labels = _labels(run, by_judge.sample, tmp_path / "labels.jsonl")
    dataset = run / "dataset.jsonl"
    # People's labels of the drawn questions: they are the sample, with the warning.
    as_sample = calibrate_run(run, labels, judge="cheap", dataset=dataset)
    assert as_sample.notes == [RANDOM_NOTE]
    assert sorted(as_sample.sample) == sorted(by_judge.sample)
    assert as_sample.rows["gamut"].to_numpy() == pytest.approx(by_judge.rows["gamut"].to_numpy())
    # With the fraction and seed they were drawn with: checked against the draw, no warning.
    drawn = calibrate_run(run, labels, judge="cheap", fraction=0.25, seed=1, dataset=dataset)
    assert drawn.notes == []
    assert drawn.rows["ci_high"].to_numpy() == pytest.approx(by_judge.rows["ci_high"].to_numpy())
    with pytest.raises(InputError, match="no verdicts for 50 of the 100 sampled"):
        # nested: the 100 drawn at a half hold the 50 labelled
        calibrate_run(run, labels, judge="cheap", fraction=0.5, seed=1, dataset=dataset)
    with pytest.raises(InputError, match="needs the run's dataset"):
        calibrate_run(run, labels, judge="cheap")


def test_a_given_sample_is_the_sample(run: Path, tmp_path: Path) -> None:
    drawn = calibrate_run(run, "strong", judge="cheap", fraction=0.25, seed=1)
    given = calibrate_run(run, "strong", judge="cheap", sample=list(reversed(drawn.sample)))
    assert given.notes == [GIVEN_NOTE]
    assert (given.fraction, given.seed) == (None, None)
    assert sorted(given.sample) == sorted(drawn.sample)
    assert given.rows["gamut"].to_numpy() == pytest.approx(drawn.rows["gamut"].to_numpy())
    assert set(given.rows["n_calibration"]) == {50}
    labels = _labels(run, drawn.sample[:10], tmp_path / "labels.jsonl")
    dataset = run / "dataset.jsonl"
    for sample, message in [
        ([], "the calibration sample is empty"),
        (["q-00000", "nowhere"], r"has 1 question\(s\) the run does not \(first: nowhere\)"),
        (drawn.sample[:11], r"has 1 question\(s\) .*labels.jsonl has no verdicts for"),
    ]:
        with pytest.raises(InputError, match=message):
            calibrate_run(run, labels, judge="cheap", sample=sample, dataset=dataset)
    with pytest.raises(InputError, match="not both"):
        calibrate_run(run, "strong", judge="cheap", fraction=0.25, sample=drawn.sample)


def test_bad_choices_are_refused(run: Path) -> None:
    with pytest.raises(InputError, match=r"neither a judge of .* nor a verdict file"):
        calibrate_run(run, "oracle", fraction=0.25)
    with pytest.raises(InputError, match="not a judge of"):
        calibrate_run(run, "strong", judge="other", fraction=0.25)
    with pytest.raises(InputError, match="calibration fraction"):
        calibrate_run(run, "strong", fraction=0.0)
    with pytest.raises(InputError, match="confidence"):
        calibrate_run(run, "strong", fraction=0.25, confidence=95)
    with pytest.raises(InputError, match="covers every question"):
        calibrate_run(run, "strong")


def test_two_scores_for_one_answer_are_refused(run: Path) -> None:
    scores = load_run(run).scores
    cheap = scores[scores["judge"] == "cheap"]
    twice = pd.concat([cheap, cheap.iloc[:1]])
    with pytest.raises(InputError, match="two scores for one answer"):
        calibrate_scores(twice, cheap, ["q-00000"], judge="cheap", calibrated_with="x")
