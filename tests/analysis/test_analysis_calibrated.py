"""Calibrated scores in the report: RUN_DIR/calibrated.json read back as the ``calibrated``
table of the JSON, the HTML page and the terminal summary; a bad file is a note, not a
crash."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval import load_run
from gamut_eval.analysis import Report, render_html, render_text, report_for_run
from gamut_eval.calibration import calibrate_run, write_calibration
from gamut_eval.cli import cli
from gamut_eval.testing import synthetic_run

MODELS = ["m1", "m2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = synthetic_run(
        tmp_path_factory.mktemp("run"),
        models=MODELS,
        judges=["strong", "cheap"],
        questions=40,
        checks=8,
        seed=5,
    )
    write_calibration(calibrate_run(out, "strong", judge="cheap", fraction=0.25, seed=2), out)
    return out


@pytest.fixture(scope="module")
def report(run: Path) -> Report:
    return report_for_run(run)


def _copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(run, target, ignore=shutil.ignore_patterns("*.html", "report*"))
    return target


def test_the_json_has_a_calibrated_row_per_model_and_setting(run: Path, report: Report) -> None:
    written = json.loads((run / "calibrated.json").read_text())
    exported = json.loads(render_text(report, "json"))["calibrated"]
    assert len(exported) == len(MODELS) * 2 == len(written["rows"])
    rows = {(r["model"], r["setting"]): r for r in written["rows"]}
    scores = load_run(run).scores
    cheap = scores[(scores["judge"] == "cheap") & scores["gamut"].notna()]
    scored = cheap.groupby(["model", "setting"]).size().to_dict()
    assert sum(scored.values()) < 40 * 4  # the synthetic run leaves some answers unscored
    for row in exported:
        source = rows[(row["model"], row["setting"])]
        assert (row["gamut"], row["gamut_low"], row["gamut_high"]) == (
            source["gamut"],
            source["ci_low"],
            source["ci_high"],
        )
        assert row["gamut_low"] < row["gamut"] < row["gamut_high"]
        assert (row["naive_judge"], row["naive_calibrated_with"]) == (
            source["naive_judge"],
            source["naive_calibrated_with"],
        )
        # the cheap judge's scored answers; a quarter of the 40 questions in the sample
        assert row["n_answers"] == scored[(row["model"], row["setting"])]
        assert row["n_calibration"] <= row["sample_questions"] == 10
        assert (row["judge"], row["calibrated_with"]) == ("cheap", "strong")
        assert row["confidence"] == 0.95
    # by setting, best first
    order = [(r["setting"], -r["gamut"]) for r in exported]
    assert order == sorted(order)


def test_the_html_page_shows_the_calibrated_table(report: Report) -> None:
    page = render_html(report, explore=False)
    assert 'id="calibrated"' in page
    assert "cheap on every answer, corrected by strong on 10 of 40 questions" in page
    for row in report.calibrated:
        interval = f"[{100 * row.gamut_low:.1f}, {100 * row.gamut_high:.1f}]"  # type: ignore[operator]
        assert f"{100 * row.gamut:.1f}" in page  # type: ignore[operator]
        assert interval in page


def test_without_the_file_there_is_no_table(run: Path, tmp_path: Path) -> None:
    target = _copy(run, tmp_path)
    (target / "calibrated.json").unlink()
    report = report_for_run(target)
    assert report.calibrated == []
    assert 'id="calibrated"' not in render_html(report, explore=False)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "json-syntax"),
        ("[1, 2]", "holds one JSON object"),
        ('{"judge": "cheap"}', "calibrated_with"),
        (None, "n_calibration"),  # a row without its count
        ("foreign", "its models are not this run's"),
    ],
)
def test_a_bad_file_is_a_note_not_a_crash(
    run: Path, tmp_path: Path, content: str | None, why: str
) -> None:
    target = _copy(run, tmp_path)
    path = target / "calibrated.json"
    data = json.loads(path.read_text())
    if content is None:
        del data["rows"][0]["n_calibration"]
        content = json.dumps(data)
    elif content == "foreign":
        data["rows"][0]["model"] = "someone/else"
        content = json.dumps(data)
    path.write_text(content)
    report = report_for_run(target)
    assert report.calibrated == []
    notes = [n for n in report.meta.notes if n.startswith(f"{path} left out")]
    assert len(notes) == 1
    assert why in notes[0]


def test_gamut_report_prints_the_calibrated_leaderboard(run: Path, tmp_path: Path) -> None:
    target = _copy(run, tmp_path)
    result = CliRunner().invoke(cli, ["report", str(target), "--format", "json"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "Calibrated Gamut x100 (10 of 40 questions)" in text
    exported = json.loads((target / "report.json").read_text())["calibrated"]
    for row in exported:
        cells = [row["model"], row["setting"], f"{100 * row['gamut']:.1f}"]
        assert re.search("[ │]+".join(re.escape(c) for c in cells), text), cells


def test_the_page_draws_the_expected_width_against_the_fraction(report: Report) -> None:
    from gamut_eval.calibration import t_value

    page = render_html(report, explore=False)
    chart = re.search(r'<svg[^>]*data-plot="calibration".*?</svg>', page, re.S)
    assert chart is not None
    desc = re.search(r"<desc>(.*?)</desc>", chart.group(0), re.S)
    assert desc is not None
    # At a quarter (10 of 40 questions) each row's planned width, from the spread its own
    # interval implies, is 2 t sqrt((1 - n / N) s^2 / n) with n = ceil(N / 4).
    widths = []
    for row in report.calibrated:
        n, total = row.n_calibration, row.n_answers
        assert row.gamut_low is not None
        assert row.gamut_high is not None
        s = (row.gamut_high - row.gamut_low) / 2 / float(t_value(0.95, n - 1))
        s *= (n / (1 - n / total)) ** 0.5
        planned = -(-total // 4)
        t = float(t_value(0.95, planned - 1))
        widths.append(200 * t * ((1 - planned / total) * s * s / planned) ** 0.5)
    widths.sort()
    median = widths[len(widths) // 2]
    expected = f"25% (10 questions): {median:.1f} [{widths[0]:.1f}, {widths[-1]:.1f}]"
    assert expected in desc.group(1)
    # every question judged by the strong judge: nothing left to estimate
    assert "100% (40 questions): 0.0 [0.0, 0.0]" in desc.group(1)
