"""`gamut run --calibrate-with` on the bundled sample, offline: a verdict file in place of
the strong judge (covering every question, or only some), the refusals, and the dry run's
planner."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from gamut_eval.calibration import RANDOM_NOTE, sample_questions
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset

SAMPLE = sample_dir()
OFFLINE, REFERENCE = "gamut/offline", "gamut/reference"
QUESTIONS = sorted(load_dataset(SAMPLE / "dataset.jsonl").by_id())


def invoke(out: Path, *extra: str) -> Result:
    args = ["run", "--responses", str(SAMPLE / "responses.jsonl"), "--judge", OFFLINE]
    return CliRunner().invoke(cli, [*args, "--out", str(out), *extra], terminal_width=200)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_reference_labels_covering_every_question_are_sampled_by_the_seed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    gold = str(SAMPLE / "gold.jsonl")
    result = invoke(out, "--calibrate-with", gold, "--calibrate-fraction", "0.5", "--seed", "2")
    assert result.exit_code == 0, result.output
    drawn = sample_questions(QUESTIONS, 0.5, 2)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["calibration"]["questions"] == drawn
    assert manifest["identity"]["calibration"] == {"calibrated_with": gold, "seed": 2}
    assert [j["judge"] for j in manifest["judges"]] == [OFFLINE]  # a file is not judged
    calibrated = json.loads((out / "calibrated.json").read_text())
    assert calibrated["sample"] == drawn
    assert calibrated["notes"] == []
    assert {r["n_calibration"] for r in calibrated["rows"]} == {6}
    assert f"{OFFLINE} calibrated with {gold} on 6 of 12 questions" in flat(result.output)
    # The same labels as the reference judge replays them: the same calibrated scores.
    judged = invoke(
        tmp_path / "judged", "--calibrate-with", REFERENCE, "--calibrate-fraction", "0.5",
        "--seed", "2",
    )  # fmt: skip
    assert judged.exit_code == 0, judged.output
    by_judge = json.loads((tmp_path / "judged" / "calibrated.json").read_text())
    assert [r["gamut"] for r in by_judge["rows"]] == [r["gamut"] for r in calibrated["rows"]]
    # That run is the planner's pilot: both judges scored the 6 sampled questions' answers
    # of 3 models in 2 settings.
    planned = invoke(tmp_path / "judged", "--dry-run", "--calibrate-with", REFERENCE)
    assert planned.exit_code == 0, planned.output
    assert "From a pilot: both judges' scores of 36 answers" in flat(planned.output)


def test_labels_of_some_questions_are_the_sample_and_the_guarantee_is_stated(
    tmp_path: Path,
) -> None:
    chosen = QUESTIONS[:4]
    labels = tmp_path / "labels.jsonl"
    with labels.open("w") as handle:
        for line in (SAMPLE / "gold.jsonl").read_text().splitlines():
            if json.loads(line)["question_id"] in chosen:
                handle.write(line + "\n")
    out = tmp_path / "run"
    result = invoke(out, "--calibrate-with", str(labels))
    assert result.exit_code == 0, result.output
    assert flat(f"note: {RANDOM_NOTE}") in flat(result.output)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["calibration"]["questions"] == chosen
    assert manifest["calibration"]["seed"] is None
    assert json.loads((out / "calibrated.json").read_text())["sample"] == chosen


def test_bad_calibration_requests_are_refused_with_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cases = [
        (["--calibrate-with", REFERENCE], "needs the fraction of questions it grades"),
        (["--calibrate-with", str(SAMPLE / "gold.jsonl")], "covers every question"),
        (["--calibrate-with", OFFLINE, "--calibrate-fraction", "0.5"], "cannot calibrate itself"),
        (["--calibrate-fraction", "0.5"], "--calibrate-fraction needs --calibrate-with"),
        (["--calibrate-with", "labels.jsonl"], "labels.jsonl: no such verdict file"),
        (
            ["--judge", REFERENCE, "--calibrate-with", "gamut/x", "--calibrate-fraction", "0.5"],
            "calibrated scores correct one judge; 2 were given",
        ),
    ]
    for extra, message in cases:
        result = invoke(out, *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert message in flat(result.output), (extra, result.output)
        assert "Traceback" not in result.output
        assert not out.exists()


def test_the_dry_run_plans_the_fraction_and_sends_nothing(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "models:\n  gamut/offline: {input: 1.0, output: 2.0}\n"
        "  gamut/reference: {input: 10.0, output: 20.0}\n"
    )
    out = tmp_path / "run"
    result = invoke(
        out, "--dry-run", "--prices", str(prices), "--calibrate-with", REFERENCE,
        "--calibrate-prior", "0.3,0.7",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "Calibration planner" in text
    assert "From the prior: per-answer score sd 0.3, judges' correlation 0.7" in text
    # 12 questions, sd 0.3, correlation 0.7: 9 questions (0.75) still leave an expected
    # width of 16.5 points, so only every question reaches 10.
    assert "recommended: --calibrate-fraction 1 (12 questions)" in text
    # Each judge priced by the dry run over every answer; the strong judge's cost scaled to
    # the share of the checks in the sampled questions (each has 6 answers).
    from gamut_eval.judge import JudgeSettings
    from gamut_eval.prices import load_prices
    from gamut_eval.run import estimate_run

    cheap, strong = (
        report.cost_standard
        for report in estimate_run(
            SAMPLE / "dataset.jsonl",
            tmp_path / "elsewhere",
            [JudgeSettings(judge=OFFLINE), JudgeSettings(judge=REFERENCE)],
            SAMPLE / "responses.jsonl",
            prices=load_prices(prices),
        )
    )
    assert cheap is not None
    assert strong is not None
    checks = {
        q: len(c.checks) for q, c in load_dataset(SAMPLE / "dataset.jsonl").checklists().items()
    }
    half = sum(checks[q] for q in sample_questions(QUESTIONS, 0.5, 0)) / sum(checks.values())
    assert "Calibration planner: expected interval width (x100) and cost (USD)" in text
    assert f"1 * 12 0.0 0.0 100% {strong:.4f} {cheap + strong:.4f}" in text
    assert (
        f"0.5 6 31.8 44.5 {100 * half:.0f}% {strong * half:.4f} {cheap + strong * half:.4f}" in text
    )
    assert not out.exists()
    wide = invoke(
        out, "--dry-run", "--calibrate-with", REFERENCE, "--calibrate-width", "0.5",
    )  # fmt: skip
    assert wide.exit_code == 0, wide.output
    # Half the questions: n = 6, width 2 t(5) sqrt(0.5 / 6 * 0.0459) = 0.318 <= 0.5;
    # 0.4: n = 5, width 2 t(4) sqrt(0.583 / 5 * 0.0459) = 0.406 <= 0.5;
    # 0.3: n = 4, 2 t(3) sqrt(0.667 / 4 * 0.0459) = 0.556 > 0.5.
    assert "recommended: --calibrate-fraction 0.4 (5 questions)" in flat(wide.output)
