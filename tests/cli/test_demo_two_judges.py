"""``gamut demo`` as a user runs it: two judges (offline and the sample's reference labels),
Table 2 filled, the held-out agreement and what the offline judge cannot detect in the
report, a rerun that continues, and terminal output that never cuts a name.

Expected values are computed here from the sample's files and the run's verdicts, with
the public scoring function and a Kendall tau-b and a Cohen's kappa written out below."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from gamut_eval import load_dataset, score_response
from gamut_eval.cli._main import cli
from gamut_eval.data import sample_dir

OFFLINE, REFERENCE = "gamut/offline", "gamut/reference"
MODELS = ("sample/thorough", "sample/brief", "sample/confused")
SETTINGS = ("multimodal", "text_only")


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    out = tmp_path_factory.mktemp("demo") / "run"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.stdout, result.stderr


def _model_means(verdicts: list[dict[str, object]], judge: str) -> dict[tuple[str, str], float]:
    """(setting, model) -> mean Gamut score over questions, from the verdict rows."""
    checklists = load_dataset(sample_dir() / "dataset.jsonl").checklists()
    by_answer: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in verdicts:
        if row["judge"] == judge:
            key = (str(row["question_id"]), str(row["model"]), str(row["setting"]))
            by_answer.setdefault(key, {})[str(row["check_id"])] = str(row["verdict"])
    scores: dict[tuple[str, str], list[float]] = {}
    for (question, model, setting), given in by_answer.items():
        card = score_response(checklists[question], given)
        assert card.gamut is not None
        scores.setdefault((setting, model), []).append(card.gamut)
    return {key: sum(v) / len(v) for key, v in scores.items()}


def _tau_b(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0 - ties a) (n0 - ties b))."""
    concordant = discordant = ties_a = ties_b = 0
    for i, j in combinations(range(len(a)), 2):
        da, db = a[i] - a[j], b[i] - b[j]
        ties_a += da == 0
        ties_b += db == 0
        if da * db > 0:
            concordant += 1
        elif da * db < 0:
            discordant += 1
    n0 = len(a) * (len(a) - 1) / 2
    return float((concordant - discordant) / ((n0 - ties_a) * (n0 - ties_b)) ** 0.5)


def _kappa(a: list[str], b: list[str]) -> float:
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in ca) / (n * n)
    return (observed - expected) / (1 - expected)


def test_the_demo_runs_both_judges_and_fills_table_2(demo: tuple[Path, str, str]) -> None:
    out, stdout, _ = demo
    manifest = json.loads((out / "run.json").read_text())
    assert [j["judge"] for j in manifest["judges"]] == [OFFLINE, REFERENCE]
    verdicts = _jsonl(out / "verdicts.jsonl")
    # the reference judge's verdicts are the sample's labels, row for row
    labels = {
        (g["question_id"], g["model"], g["setting"], g["check_id"]): g["verdict"]
        for g in _jsonl(sample_dir() / "gold.jsonl")
    }
    replayed = {
        (r["question_id"], r["model"], r["setting"], r["check_id"]): r["verdict"]
        for r in verdicts
        if r["judge"] == REFERENCE
    }
    assert replayed == labels
    offline, reference = _model_means(verdicts, OFFLINE), _model_means(verdicts, REFERENCE)
    report = json.loads(
        CliRunner().invoke(cli, ["report", str(out), "--format", "json", "-o", "-"]).stdout
    )
    cells = {(r["setting"], r["model"], r["judge"]): r["gamut"] for r in report["judge_scores"]}
    for setting in SETTINGS:
        for model in MODELS:
            assert cells[(setting, model, OFFLINE)] == pytest.approx(offline[(setting, model)])
            assert cells[(setting, model, REFERENCE)] == pytest.approx(reference[(setting, model)])
    for pair in report["judge_pairs"]:
        setting = pair["setting"]
        a = [offline[(setting, m)] for m in MODELS]
        b = [reference[(setting, m)] for m in MODELS]
        assert pair["tau_b"] == pytest.approx(_tau_b(a, b))
        gaps = {m: offline[(setting, m)] - reference[(setting, m)] for m in MODELS}
        largest = max(gaps, key=lambda m: abs(gaps[m]))
        assert pair["max_gap_model"] == largest
        assert pair["max_abs_gap"] == pytest.approx(abs(gaps[largest]))
    # reference labels charge contradictions: the confused system scores below zero
    assert (
        reference[("multimodal", "sample/confused")]
        < 0
        < offline[("multimodal", "sample/confused")]
    )
    assert "Gamut x100 per judge — multimodal" in stdout
    assert "Judge agreement" in stdout


def test_the_report_gives_held_out_agreement_and_what_offline_misses(
    demo: tuple[Path, str, str],
) -> None:
    out, _, stderr = demo
    verdicts = _jsonl(out / "verdicts.jsonl")
    by_judge: dict[str, dict[tuple[object, ...], str]] = {OFFLINE: {}, REFERENCE: {}}
    for r in verdicts:
        key = (r["question_id"], r["model"], r["setting"], r["check_id"])
        by_judge[str(r["judge"])][key] = str(r["verdict"])
    held_out = set(sorted({str(k[0]) for k in by_judge[REFERENCE]})[1::2])
    keys = [k for k in by_judge[REFERENCE] if k[0] in held_out]
    mine = [by_judge[OFFLINE][k] for k in keys]
    theirs = [by_judge[REFERENCE][k] for k in keys]
    agreement = sum(x == y for x, y in zip(mine, theirs, strict=True)) / len(keys)
    kappa = _kappa(theirs, mine)
    report = json.loads(
        CliRunner().invoke(cli, ["report", str(out), "--format", "json", "-o", "-"]).stdout
    )
    rows = {(r["judge"], r["part"]): r for r in report["reference_agreement"]}
    held = rows[(OFFLINE, "held_out")]
    assert (held["questions"], held["checks"]) == (6, len(keys))
    assert held["agreement"] == pytest.approx(agreement)
    assert held["kappa"] == pytest.approx(kappa)
    assert held["fitted_on"] is False
    assert rows[(OFFLINE, "tuning")]["fitted_on"] is True
    contradicted = [k for k, v in by_judge[REFERENCE].items() if v == "contradicts"]
    found = sum(by_judge[OFFLINE][k] == "contradicts" for k in contradicted)
    credited = sum(by_judge[OFFLINE][k] == "meets" for k in contradicted)
    notes = " ".join(report["meta"]["notes"])
    assert (
        f"agrees with {REFERENCE} on {100 * agreement:.1f}% of the {len(keys)} checks of the 6 "
        f"held-out questions (Cohen's kappa {kappa:.2f})"
    ) in notes
    assert "not by independent raters" in notes
    sentence = (
        f"{OFFLINE} matches words, so it cannot detect a false statement: of the "
        f"{len(contradicted)} checks the reference labels mark contradicts, it marked {found} "
        f"of them contradicts and gave {credited} of them full credit."
    )
    assert sentence in notes
    assert sentence in " ".join(stderr.split())  # said on the terminal too
    html = (out / "report.html").read_text()
    assert 'data-table="reference_agreement"' in html
    assert "cannot detect a false statement" in html


def test_agreement_on_the_demos_verdicts_gives_a_report_per_judge(
    demo: tuple[Path, str, str],
) -> None:
    """The natural command after the demo: its file holds two judges' rows."""
    out, _, _ = demo
    result = CliRunner().invoke(
        cli, ["agreement", "--verdicts", str(out / "verdicts.jsonl"), "--json"]
    )
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert [r["judge"] for r in reports] == [OFFLINE, REFERENCE]
    rows = len(_jsonl(sample_dir() / "gold.jsonl"))
    for report in reports:
        assert report["matching"]["compared"] == rows
        assert report["score_shift_answers"] == 12 * len(MODELS) * len(SETTINGS)
    # the reference judge replays the labels: full agreement, no score shift
    assert reports[1]["overall"]["accuracy"]["value"] == 1.0
    assert reports[1]["mean_abs_score_shift"] == 0.0


def test_a_rerun_continues_the_same_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert first.exit_code == 0, first.output
    scores = (out / "scores.jsonl").read_text()
    again = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert again.exit_code == 0, again.output
    text = " ".join(again.stderr.split())
    for judge in (OFFLINE, REFERENCE):
        assert f"{judge}: 1272 verdicts (1272 reused from the store, 0 judged now)" in text
    assert (out / "scores.jsonl").read_text() == scores


def test_an_earlier_one_judge_demo_folder_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "run"
    sample = sample_dir()
    older = CliRunner().invoke(
        cli,
        ["run", "--responses", str(sample / "responses.jsonl"), "--judge", OFFLINE,
         "--out", str(out)],
    )  # fmt: skip
    assert older.exit_code == 0, older.output
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "holds the demo of an earlier version" in " ".join(result.stderr.split())
    assert {r["judge"] for r in _jsonl(out / "verdicts.jsonl")} == {OFFLINE, REFERENCE}
    # any other run is still refused
    other = tmp_path / "other"
    answers = str(sample / "responses.jsonl")
    made = CliRunner().invoke(
        cli, ["run", "--responses", answers, "--judge", REFERENCE, "--out", str(other)]
    )
    assert made.exit_code == 0, made.output
    refused = CliRunner().invoke(cli, ["demo", "--out", str(other)])
    assert refused.exit_code == 2


NAMES = re.compile(r"\b(sample|gamut)/([A-Za-z0-9_-]*)")
WHOLE = {"sample": {"thorough", "brief", "confused"}, "gamut": {"offline", "reference"}}


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_demo_fits_the_terminal_without_cutting_a_name(tmp_path: Path, width: int) -> None:
    env = {**os.environ, "COLUMNS": str(width), "TERM": "dumb"}
    result = subprocess.run(
        [sys.executable, "-m", "gamut_eval", "demo", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout + result.stderr  # not a terminal: no colour codes
    for text in (result.stdout, result.stderr):
        assert "…" not in text
        for prefix, name in NAMES.findall(text):
            assert name in WHOLE[prefix], f"a cut name: {prefix}/{name} at {width} columns"
    for line in result.stdout.splitlines():
        if "/" in line and not line.startswith(("HTML report", "results in")):
            assert cell_len(line) <= width, line
    # every name is shown whole somewhere: in a table, or in a legend under it
    for name in (*MODELS, OFFLINE, REFERENCE):
        assert name in result.stdout
    assert result.stdout.count("Leaderboard (Gamut x100)") == 2


def test_a_demo_folder_judged_under_an_earlier_prompt_is_replaced(tmp_path: Path) -> None:
    """Its verdicts are those of the built-in judges, whose keys hold no prompt: the store
    is kept and every verdict reused; only run.json's identity was an earlier one."""
    out = tmp_path / "run"
    assert CliRunner().invoke(cli, ["demo", "--out", str(out)]).exit_code == 0
    manifest = json.loads((out / "run.json").read_text())
    manifest["identity"]["prompt_version"] = "gamut-judge-v1"
    for judge in manifest["identity"]["judges"]:
        del judge["prompt_layout"]
    (out / "run.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stderr.split())
    assert "holds the demo of an earlier version (an earlier judge prompt)" in text
    assert f"{OFFLINE}: 1272 verdicts (1272 reused from the store, 0 judged now)" in text
    again = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert "earlier version" not in again.stderr  # now it is this version's demo


# -- what a rerun pays for ------------------------------------------------------------------

KEPT = ("verdicts.jsonl", "report.html", *(f"logs/gamut-{s}_sample-{m}.eval"
        for s in SETTINGS for m in ("thorough", "brief", "confused")))  # fmt: skip
"""What a rerun with nothing to judge keeps as it was: the verdicts, and what only they
and the code decide."""


def _stamps(out: Path) -> dict[str, tuple[int, bytes]]:
    return {name: ((out / name).stat().st_mtime_ns, (out / name).read_bytes()) for name in KEPT}


def _demo(out: Path) -> str:
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return " ".join((result.stdout + result.stderr).split())


def test_a_rerun_with_nothing_to_judge_writes_nothing_anew(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _demo(out)
    before, scores = _stamps(out), (out / "scores.jsonl").read_bytes()
    calibrated = (out / "calibrated.json").stat().st_mtime_ns
    text = _demo(out)
    assert f"{OFFLINE}: 1272 verdicts (1272 reused from the store, 0 judged now)" in text
    assert _stamps(out) == before  # not even rewritten with the same bytes
    assert (out / "calibrated.json").stat().st_mtime_ns == calibrated
    table = re.search(r"Calibrated Gamut x100 .*?Six questions", text)
    assert table is not None
    assert "sample/confused" in table.group(0)
    assert table.group(0) in first  # the same calibrated table, from the file kept
    assert (out / "scores.jsonl").read_bytes() == scores
    assert f"HTML report: {out}/report.html" in text


def test_a_rerun_after_an_interrupted_one_writes_everything_again(tmp_path: Path) -> None:
    # An invocation that stopped before it finished leaves no record of finishing (it
    # removes the last one first): the next writes every file again, from the same verdicts.
    out = tmp_path / "run"
    _demo(out)
    before = _stamps(out)
    (out / ".finished.json").unlink()
    _demo(out)
    after = _stamps(out)
    assert all(after[name][0] != before[name][0] for name in KEPT)
    assert after["verdicts.jsonl"][1] == before["verdicts.jsonl"][1]


def test_a_store_written_since_or_other_code_is_not_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gamut_eval import _folder
    from gamut_eval.judge import VerdictStore

    out = tmp_path / "run"
    _demo(out)
    with sqlite3.connect(out / "store.sqlite") as db:
        (key,) = db.execute("SELECT key FROM verdicts LIMIT 1").fetchone()
    with VerdictStore(out / "store.sqlite") as store:  # a verdict written again, by anyone
        row = store.get([key])[key]
        store.put([dataclasses.replace(row, created_at=row.created_at + 1.0)])
    stamp = (out / "verdicts.jsonl").stat().st_mtime_ns
    _demo(out)
    assert (out / "verdicts.jsonl").stat().st_mtime_ns != stamp
    stamp = (out / "verdicts.jsonl").stat().st_mtime_ns
    monkeypatch.setattr(_folder, "_code", lambda: "another version")
    _demo(out)
    assert (out / "verdicts.jsonl").stat().st_mtime_ns != stamp


def test_a_missing_file_is_written_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _demo(out)
    (out / "logs" / "gamut-text_only_sample-brief.eval").unlink()
    (out / "report.html").unlink()
    _demo(out)
    assert (out / "logs" / "gamut-text_only_sample-brief.eval").is_file()
    assert (out / "report.html").is_file()


_PROBE = """
import json, sys
from gamut_eval.cli import main
try:
    main(["demo", "--out", sys.argv[1]])
except SystemExit as exc:
    code = exc.code
print("\\n@@MODULES@@" + json.dumps([code, sorted(sys.modules)]))
"""
UNNEEDED = ("inspect_ai", "sklearn", "scipy")
"""Libraries the demo's work does not need: its Inspect logs are written without Inspect
AI, question diversity computes what scikit-learn and SciPy did in NumPy. Importing them
took about three seconds of a demo that now takes less than two."""


def test_the_demo_imports_no_library_its_work_does_not_need(tmp_path: Path) -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = tmp_path / "run"
    for _ in range(2):  # the first run and a rerun
        result = subprocess.run(
            [sys.executable, "-c", _PROBE, str(out)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        )
        code, modules = json.loads(result.stdout.rpartition("\n@@MODULES@@")[2])
        assert code in (0, None), result.stderr
        assert not [m for m in modules if m.split(".")[0] in UNNEEDED]
        assert len(list((out / "logs").glob("*.eval"))) == 6
        assert (out / "report.html").is_file()


# -- the offline judge calibrated with the reference labels ---------------------------------


def _answer_scores(verdicts: list[dict[str, object]], judge: str) -> dict[tuple[str, ...], float]:
    """(setting, model, question) -> Gamut score of that answer under ``judge``."""
    checklists = load_dataset(sample_dir() / "dataset.jsonl").checklists()
    by_answer: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in verdicts:
        if row["judge"] == judge:
            key = (str(row["setting"]), str(row["model"]), str(row["question_id"]))
            by_answer.setdefault(key, {})[str(row["check_id"])] = str(row["verdict"])
    out = {}
    for (setting, model, question), given in by_answer.items():
        card = score_response(checklists[question], given)
        assert card.gamut is not None
        out[(setting, model, question)] = card.gamut
    return out


def test_the_demo_calibrates_the_offline_judge_on_the_held_out_questions(
    demo: tuple[Path, str, str], tmp_path: Path
) -> None:
    from gamut_eval.calibration import calibrate_run
    from gamut_eval.data import TUNING_QUESTIONS

    out, stdout, _ = demo
    questions = sorted(load_dataset(sample_dir() / "dataset.jsonl").by_id())
    held_out = [q for q in questions if q not in TUNING_QUESTIONS]
    assert (len(questions), len(held_out)) == (12, 6)
    written = json.loads((out / "calibrated.json").read_text())
    assert (written["judge"], written["calibrated_with"]) == (OFFLINE, REFERENCE)
    assert (sorted(written["sample"]), written["n_questions"]) == (held_out, 12)
    rows = {(r["setting"], r["model"]): r for r in written["rows"]}
    assert set(rows) == {(s, m) for s in SETTINGS for m in MODELS}

    verdicts = _jsonl(out / "verdicts.jsonl")
    offline, reference = _answer_scores(verdicts, OFFLINE), _answer_scores(verdicts, REFERENCE)
    text = " ".join(stdout.split())
    assert "Calibrated Gamut x100 (6 of 12 questions)" in text
    assert "gamut/offline corrected by gamut/reference on 6 questions" in text
    assert "Six questions are enough to show the direction" in text
    for (setting, model), row in rows.items():
        cheap = [offline[(setting, model, q)] for q in questions]
        strong = [reference[(setting, model, q)] for q in held_out]
        sampled_cheap = [offline[(setting, model, q)] for q in held_out]
        # one answer per question: 12 answers, 6 of them in the sample
        assert (row["n_answers"], row["n_calibration"]) == (12, 6)
        assert row["naive_judge"] == pytest.approx(sum(cheap) / 12)
        assert row["naive_calibrated_with"] == pytest.approx(sum(strong) / 6)
        # the estimator written out: lam times the cheap mean of every answer, plus the mean
        # over the sample of the strong score minus lam times the cheap one
        lam = row["lam"]
        assert 0.0 <= lam <= 1.0
        residual = sum(s - lam * c for s, c in zip(strong, sampled_cheap, strict=True)) / 6
        assert row["gamut"] == pytest.approx(lam * sum(cheap) / 12 + residual)
        assert row["ci_low"] < row["gamut"] < row["ci_high"]
        # the printed row: calibrated score, interval, both judges on every answer, k
        full_reference = sum(reference[(setting, model, q)] for q in questions) / 12
        cells = [
            model,
            setting,
            f"{100 * row['gamut']:.1f}",
            f"[{100 * row['ci_low']:.1f},{100 * row['ci_high']:.1f}]",
            f"{100 * row['naive_judge']:.1f}",
            f"{100 * full_reference:.1f}",
        ]
        assert re.search(" +".join(re.escape(c) for c in cells) + " ", text), cells

    # the same numbers from calibrate_run called directly, and from the reference labels
    # of the six questions given as a verdict file (scored with the dataset's checklists)
    direct = calibrate_run(out, REFERENCE, judge=OFFLINE, sample=held_out).to_json()
    numbers = ("gamut", "ci_low", "ci_high", "lam", "naive_judge", "naive_calibrated_with")
    for ours, theirs in zip(written["rows"], direct["rows"], strict=True):
        assert {k: ours[k] for k in numbers} == pytest.approx({k: theirs[k] for k in numbers})
    labels = tmp_path / "held-out-labels.jsonl"
    gold = _jsonl(sample_dir() / "gold.jsonl")
    labels.write_text("".join(json.dumps(r) + "\n" for r in gold if r["question_id"] in held_out))
    from_file = calibrate_run(
        out, labels, judge=OFFLINE, dataset=sample_dir() / "dataset.jsonl"
    ).to_json()
    assert sorted(from_file["sample"]) == held_out
    # the demo's HTML report shows the calibrated table
    page = (out / "report.html").read_text()
    assert 'id="calibrated"' in page
    assert "gamut/offline on every answer, corrected by gamut/reference on 6 of 12" in page
    for ours, theirs in zip(written["rows"], from_file["rows"], strict=True):
        assert (ours["model"], ours["setting"]) == (theirs["model"], theirs["setting"])
        assert {k: ours[k] for k in numbers} == pytest.approx({k: theirs[k] for k in numbers})
