"""The drill-down data embedded in the HTML report: its shape, its encoding of verdicts,
explanations and answers (compared with the run's own files), the text budget, thumbnails,
and the escaping that keeps it inside its script block."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gamut_eval.analysis import (
    Report,
    ReportConfig,
    build_report,
    load_run_data,
    render_html,
    report_for_run,
)
from gamut_eval.analysis._explore import explore_data
from gamut_eval.testing import synthetic_run

MODELS = ["a/one", "b/two", 'evil/</script><img src=x onerror="alert(1)">']
JUDGES = ["j/first", "k/second"]
DATA = re.compile(r'<script type="application/json" id="gamut-data">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(
        tmp_path_factory.mktemp("explore") / "run",
        models=MODELS,
        judges=JUDGES,
        questions=6,
        checks=5,
    )


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_verdict_explanation_and_answer_is_where_the_shape_says(run_dir: Path) -> None:
    data = explore_data(load_run_data(run_dir))
    assert data is not None
    assert data["settings"] == ["multimodal", "text_only"]
    assert data["judges"] == JUDGES
    assert data["models"] == sorted(MODELS)
    assert len(data["questions"]) == 6
    S, J, M = data["settings"], data["judges"], data["models"]
    letters = {"meets": "M", "partially_meets": "P", "missing": "O", "contradicts": "C"}
    by_id = {q["id"]: q for q in data["questions"]}
    verdicts = _rows(run_dir / "verdicts.jsonl")
    assert len(verdicts) == 2 * 2 * 3 * 6 * 5
    for row in verdicts:
        q = by_id[row["question_id"]]
        c = [k["id"] for k in q["checks"]].index(row["check_id"])
        i = ((S.index(row["setting"]) * len(J) + J.index(row["judge"])) * len(M)
             + M.index(row["model"])) * len(q["checks"]) + c  # fmt: skip
        assert q["verdicts"][i] == letters.get(row["verdict"], "U")  # type: ignore[arg-type]
        assert q["texts"][q["explanations"][i]] == row["explanation"]
    for row in _rows(run_dir / "responses.jsonl"):
        q = by_id[row["question_id"]]
        slot = S.index(row["setting"]) * len(M) + M.index(row["model"])
        assert q["texts"][q["answers"][slot]] == row["response"]
    first = data["questions"][0]
    assert [c["id"] for c in first["checks"]] == [f"c-{k:02d}" for k in range(5)]
    assert {c["tier"] for c in first["checks"]} <= {"answer_critical", "valuable", "context"}
    assert len(first["rubric"]) == 5
    assert len(first["scores"]) == 2 * 2 * 3


def test_scores_are_the_per_response_scores(run_dir: Path) -> None:
    data = explore_data(load_run_data(run_dir))
    assert data is not None
    S, J, M = data["settings"], data["judges"], data["models"]
    by_id = {q["id"]: q for q in data["questions"]}
    for row in _rows(run_dir / "scores.jsonl"):
        q = by_id[row["question_id"]]
        i = (S.index(row["setting"]) * len(J) + J.index(row["judge"])) * len(M) + M.index(
            row["model"]
        )
        expected = None if row["gamut"] is None else round(1000 * row["gamut"])
        assert q["scores"][i] == expected


def test_texts_past_the_budget_are_left_out_question_by_question(run_dir: Path) -> None:
    full = explore_data(load_run_data(run_dir))
    assert full is not None
    costs = [
        sum(len(t) for t in q["texts"]) + 3 * len(q["explanations"]) for q in full["questions"]
    ]
    budget = costs[0] + costs[1] + costs[2] // 2  # room for two questions and a half
    small = explore_data(load_run_data(run_dir), text_budget=budget)
    assert small is not None
    assert small["questions_with_texts"] == 2
    kept = [q["texts"] is not None for q in small["questions"]]
    assert kept[:3] == [True, True, False]
    for q in small["questions"][2:]:
        assert q["texts"] is None  # the first that does not fit ends the texts
        assert q["answers"] is None
        assert q["explanations"] is None
        assert len(q["verdicts"]) == 2 * 2 * 3 * 5  # verdicts stay for every question


def test_the_embedded_json_cannot_end_its_block(run_dir: Path) -> None:
    run = load_run_data(run_dir)
    html = render_html(build_report(run, ReportConfig(resamples=20)), run)
    blocks = DATA.findall(html)
    assert len(blocks) == 1  # embedded once
    assert "<" not in blocks[0]
    assert ">" not in blocks[0]
    data = json.loads(blocks[0])
    assert MODELS[2] in data["models"]  # the escapes read back to the planted text


def test_a_report_without_its_run_folder_has_no_drill_down(run_dir: Path, tmp_path: Path) -> None:
    report = build_report(load_run_data(run_dir), ReportConfig(resamples=20))
    # re-rendered elsewhere from its JSON: the loaded results do not travel with it
    data = report.model_dump(mode="json")
    data["meta"]["run_dir"] = None
    moved = Report.model_validate(data)
    assert moved.run is None
    html = render_html(moved)
    assert 'id="gamut-data"' not in html
    again = Report.model_validate(report.model_dump(mode="json"))
    assert 'id="gamut-data"' in render_html(again)  # found through meta.run_dir


def test_the_html_report_reads_the_verdicts_once(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gamut_eval._verdict_table as verdict_table

    reads: list[bool] = []
    real = verdict_table.read_verdict_table

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(bool(kwargs.get("explanations")))
        return real(*args, **kwargs)

    monkeypatch.setattr(verdict_table, "read_verdict_table", counted)
    for module in ("gamut_eval.analysis._rundata", "gamut_eval.analysis._explore"):
        monkeypatch.setattr(f"{module}.read_verdict_table", counted)
    report = report_for_run(run_dir, ReportConfig(resamples=20), explanations=True)
    html = render_html(report)
    assert 'id="gamut-data"' in html
    assert reads == [True]  # one read, explanations included, shared by tables and page


def test_demo_report_embeds_small_thumbnails(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    subprocess.run(
        [sys.executable, "-m", "gamut_eval", "demo", "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    html = (out / "report.html").read_text()
    data = json.loads(DATA.findall(html)[0])
    images = [q["image"] for q in data["questions"]]
    assert all(i and i.startswith("data:image/jpeg;base64,") for i in images)
    assert max(len(i) for i in images) < 40_000  # downscaled, not the original PNGs
    assert data["has_answers"]
    assert data["questions_with_texts"] == len(images)


def test_a_broken_verdicts_file_is_named_on_the_page(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "run"
    shutil.copytree(run_dir, broken)
    run = load_run_data(broken)
    report = build_report(run, ReportConfig(resamples=20))
    lines = (broken / "verdicts.jsonl").read_text().splitlines()
    lines[4] = '{"question_id": "q-00000", "model":'
    (broken / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    html = render_html(report)
    assert 'id="gamut-data"' not in html
    note = re.search(r'<section id="explore"><h2>Explore</h2>\s*<p class="note">([^<]*)</p>', html)
    assert note is not None
    assert "verdicts.jsonl:line 5" in note.group(1)  # the line that does not parse
