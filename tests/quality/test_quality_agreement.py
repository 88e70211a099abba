"""``gamut agreement``: a small judge/gold pair worked by hand, matching, bad input, and the
bundled sample's gold as the default labels."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from quality_helpers import fact_record, invoke, write_jsonl

from gamut_eval.data import sample_dir
from gamut_eval.judge import grade_check

AC, V = "answer_critical", "valuable"
RECORDS = [
    fact_record(
        "q1",
        {
            "c1": (AC, "Mentions amber."),
            "c2": (V, "Mentions basalt."),
            "c3": (V, "Mentions cobalt."),
        },
    ),
    fact_record("q2", {"c1": (AC, "Mentions dahlia."), "c2": (V, "Mentions ember.")}),
]


def _row(
    qid: str, check: str, verdict: str | None, model: str = "m", setting: str = "multimodal"
) -> dict[str, Any]:
    return {
        "question_id": qid,
        "model": model,
        "setting": setting,
        "check_id": check,
        "verdict": verdict,
    }


GOLD = [
    _row("q1", "c1", "meets"),
    _row("q1", "c2", "missing"),
    _row("q1", "c3", "meets"),
    _row("q2", "c1", "partially_meets"),
    _row("q2", "c2", "contradicts"),
    _row("q2", "c1", "meets", setting="text_only"),  # the judge left it unscored
    _row("q2", "c2", "missing", setting="text_only"),  # no judge row
]
JUDGED = [
    _row("q1", "c1", "meets"),
    _row("q1", "c2", "meets"),
    _row("q1", "c3", "meets"),
    _row("q2", "c1", "partially_meets"),
    _row("q2", "c2", "missing"),
    _row("q2", "c1", None, setting="text_only"),
    _row("q1", "c1", "meets", model="other"),  # no gold row
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "dataset": write_jsonl(tmp_path / "dataset.jsonl", RECORDS),
        "gold": write_jsonl(tmp_path / "gold.jsonl", GOLD),
        "verdicts": write_jsonl(tmp_path / "verdicts.jsonl", JUDGED),
    }


def _agreement(files: dict[str, Path], *extra: str) -> dict[str, Any]:
    result = invoke(
        "agreement",
        "--verdicts", str(files["verdicts"]),
        "--gold", str(files["gold"]),
        "--dataset", str(files["dataset"]),
        "--json",
        *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_statistics_of_a_small_pair_by_hand(files: dict[str, Path]) -> None:
    report = _agreement(files)
    overall = report["overall"]
    # Compared (gold, judge): (M,M) (S,M) (M,M) (P,P) (C,S): 3 of 5 agree.
    assert overall["n"] == 5
    assert overall["units"] == 2
    assert overall["accuracy"]["value"] == pytest.approx(3 / 5)
    # Marginals gold: M2 S1 P1 C1; judge: M3 S1 P1 C0.
    # p_e = (2*3 + 1*1 + 1*1 + 1*0) / 25 = 8/25; kappa = (15/25 - 8/25) / (17/25) = 7/17.
    assert overall["cohen_kappa"]["value"] == pytest.approx(7 / 17)
    # Ordinal alpha: n_c over both raters C1 S2 P2 M5 (n = 10), mid-ranks 0.5, 2, 4, 7.5.
    # Disagreements (S,M) delta 5.5 and (C,S) delta 1.5: sum o delta^2 = 2*30.25 + 2*2.25 = 65.
    # sum n_c n_k delta^2 = 2 * (1*2*2.25 + 1*2*12.25 + 1*5*49 + 2*2*4 + 2*5*30.25 + 2*5*12.25)
    # = 2 * 715 = 1430; alpha = 1 - 9 * 65 / 1430 = 1 - 9/22 = 13/22.
    assert overall["krippendorff_alpha"]["value"] == pytest.approx(13 / 22)
    # Rows gold, columns judge, in the order contradicts, missing, partially_meets, meets.
    assert report["labels"] == ["contradicts", "missing", "partially_meets", "meets"]
    assert overall["confusion"] == [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 2]]


def test_groups_by_tier_and_kind(files: dict[str, Path]) -> None:
    report = _agreement(files)
    # answer_critical: q1/c1 (M,M), q2/c1 (P,P); valuable: (S,M) (M,M) (C,S): 1 of 3.
    assert report["by_tier"]["answer_critical"]["accuracy"]["value"] == 1.0
    assert report["by_tier"]["valuable"]["accuracy"]["value"] == pytest.approx(1 / 3)
    assert list(report["by_tier"]) == ["answer_critical", "valuable"]
    assert list(report["by_kind"]) == ["fact"]
    assert report["by_kind"]["fact"]["n"] == 5


def test_score_moves_when_the_judge_replaces_the_humans(files: dict[str, Path]) -> None:
    report = _agreement(files)
    # Weights AC 0.6, V 0.3 (no context checks: the weights renormalise over 0.9).
    # Gold  q1: AC 1, V (1 + 0)/2 = 0.5 -> (0.6 + 0.15)/0.9 = 5/6.
    #       q2: AC 0.5, V (-2)/(2) = -1  -> (0.3 - 0.3)/0.9 = 0.   Mean 5/12.
    # Judge q1: AC 1, V 1 -> 1.  q2: AC 0.5, V 0 -> 0.3/0.9 = 1/3.  Mean 2/3.
    [shift] = report["score_shift"]
    assert (shift["model"], shift["setting"]) == ("m", "multimodal")
    assert shift["human"] == pytest.approx(5 / 12)
    assert shift["judge"] == pytest.approx(2 / 3)
    assert shift["difference"] == pytest.approx(3 / 12)
    assert report["mean_abs_score_shift"] == pytest.approx(0.25)


def test_unmatched_and_unscored_rows_are_reported_and_left_out(files: dict[str, Path]) -> None:
    matching = _agreement(files)["matching"]
    assert matching == {
        "judge_rows": 7,
        "gold_rows": 7,
        "matched": 6,
        "compared": 5,
        "unscored_judge": 1,
        "unscored_gold": 0,
        "only_judge": 1,
        "only_gold": 1,
        "examples": {
            "only_judge": [["q1", "other", "multimodal", "c1"]],
            "only_gold": [["q2", "m", "text_only", "c2"]],
            "unscored": [["q2", "m", "text_only", "c1"]],
        },
    }


def test_bootstrap_options_are_recorded_and_seeded(files: dict[str, Path]) -> None:
    first = _agreement(files, "--resamples", "300", "--seed", "3", "--confidence", "0.9")
    again = _agreement(files, "--resamples", "300", "--seed", "3", "--confidence", "0.9")
    assert first["bootstrap"] == {
        "n_resamples": 300,
        "seed": 3,
        "confidence": 0.9,
        "unit": "question_id",
    }
    assert first["overall"] == again["overall"]


def test_tables_and_json_file(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "agreement.json"
    result = invoke(
        "agreement", "--verdicts", str(files["verdicts"]), "--gold", str(files["gold"]),
        "--dataset", str(files["dataset"]), "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Judge vs gold" in result.stdout
    assert "Confusion" in result.stdout
    assert json.loads(out.read_text())["overall"]["n"] == 5


def test_bad_rows_exit_2_naming_file_and_line(files: dict[str, Path], tmp_path: Path) -> None:
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            _row("q1", "c1", "meets"),
            _row("q1", "c1", "missing"),  # the same check twice
            _row("q1", "c9", "meets"),  # no such check
            _row("q1", "c2", "mostly meets"),  # not a verdict
            _row("q1", "c3", ["meets"]),  # type: ignore[arg-type]  # not even a string
        ],
    )
    result = invoke("agreement", "--verdicts", str(bad), "--gold", str(files["gold"]),
                    "--dataset", str(files["dataset"]))  # fmt: skip
    assert result.exit_code == 2
    assert f"{bad}:2" in result.stderr
    assert "unique-verdict" in result.stderr
    assert f"{bad}:3" in result.stderr
    assert "known-check" in result.stderr
    assert f"{bad}:4" in result.stderr
    assert "verdict-value" in result.stderr
    assert f"{bad}:5" in result.stderr


def test_files_about_different_answers_exit_2(files: dict[str, Path], tmp_path: Path) -> None:
    other = write_jsonl(tmp_path / "other.jsonl", [_row("q1", "c1", "meets", model="x")])
    result = invoke("agreement", "--verdicts", str(other), "--gold", str(files["gold"]),
                    "--dataset", str(files["dataset"]))  # fmt: skip
    assert result.exit_code == 2
    assert "no check has a verdict in both" in result.stderr
    assert result.stderr.strip().endswith("(options --gold, --dataset)")


def test_several_judges_in_one_file_give_one_report_each_or_the_one_chosen(
    files: dict[str, Path], tmp_path: Path
) -> None:
    rows = [r | {"judge": j} for j in ("a/x", "b/y") for r in JUDGED]
    both = write_jsonl(tmp_path / "both.jsonl", rows)
    args = ["agreement", "--verdicts", str(both), "--gold", str(files["gold"]),
            "--dataset", str(files["dataset"])]  # fmt: skip
    each = invoke(*args, "--json")
    assert each.exit_code == 0, each.output
    reports = json.loads(each.stdout)
    assert [r["judge"] for r in reports] == ["a/x", "b/y"]
    assert [r["overall"]["accuracy"]["value"] for r in reports] == [pytest.approx(3 / 5)] * 2
    tables = invoke(*args)
    assert tables.exit_code == 0, tables.output
    assert tables.stdout.count("judge: ") == 2
    chosen = invoke(*args, "--judge", "b/y", "--json")
    assert chosen.exit_code == 0, chosen.output
    assert json.loads(chosen.stdout)["judge"] == "b/y"
    assert json.loads(chosen.stdout)["overall"]["accuracy"]["value"] == pytest.approx(3 / 5)


def test_the_library_asks_for_a_judge_in_one_line(files: dict[str, Path], tmp_path: Path) -> None:
    from gamut_eval.dataset import load_dataset
    from gamut_eval.errors import InputError
    from gamut_eval.quality import agreement_report

    both = write_jsonl(
        tmp_path / "both.jsonl", [r | {"judge": j} for j in ("a/x", "b/y") for r in JUDGED]
    )
    with pytest.raises(InputError) as caught:
        agreement_report(both, files["gold"], load_dataset(files["dataset"]))
    assert (
        str(caught.value)
        == f"{both} holds the verdicts of 2 judges (a/x, b/y); choose one with judge"
    )
    assert caught.value.setting == "judge"


def test_rows_repeated_without_a_judge_are_counted_not_listed_row_by_row(
    files: dict[str, Path], tmp_path: Path
) -> None:
    twice = write_jsonl(tmp_path / "twice.jsonl", JUDGED + JUDGED)
    result = invoke("agreement", "--verdicts", str(twice), "--gold", str(files["gold"]),
                    "--dataset", str(files["dataset"]))  # fmt: skip
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert (
        lines[0] == f"error: {twice}: 7 places break the same rule [unique-verdict]; the first 5:"
    )
    assert len(lines) == 6
    assert lines[1].startswith(f"{twice}:8:$: a second verdict")


def test_score_shift_needs_complete_answers_only(files: dict[str, Path], tmp_path: Path) -> None:
    """People's labels that cover a subset of the checks: agreement on what matches, the
    score shift on the answers labelled in full."""
    partial = write_jsonl(
        tmp_path / "partial.jsonl",
        [r for r in GOLD if (r["question_id"], r["check_id"]) != ("q1", "c3")],
    )
    report = _agreement({**files, "gold": partial})
    assert report["matching"]["compared"] == 4
    assert report["matching"]["only_judge"] == 2
    # Only q2 multimodal is complete: gold AC 0.5, V -1 -> 0; judge AC 0.5, V 0 -> 1/3.
    [shift] = report["score_shift"]
    assert shift["human"] == pytest.approx(0.0)
    assert shift["judge"] == pytest.approx(1 / 3)
    assert report["score_shift_answers"] == 1
    # Answers with rows: q1 m mm, q2 m mm, q2 m text_only, q1 other mm; one complete.
    assert report["score_shift_left_out"] == 3


def test_default_gold_is_the_sample_and_matches_the_readme(tmp_path: Path) -> None:
    """The offline judge's verdicts on the held-out half (every other question in id order,
    from the second) against the default labels give docs/sample.md's held-out figures."""
    sample = sample_dir()
    from gamut_eval.dataset import load_dataset

    dataset = load_dataset(sample / "dataset.jsonl")
    checks = {(q, c.id): c for q, cl in dataset.checklists().items() for c in cl.checks}
    answers = {}
    for line in (sample / "responses.jsonl").read_text().splitlines():
        row = json.loads(line)
        answers[(row["question_id"], row["model"], row["setting"])] = row["response"]
    held_out = sorted(r.id for r in dataset)[1::2]
    rows = []
    for line in (sample / "gold.jsonl").read_text().splitlines():
        gold = json.loads(line)
        if gold["question_id"] not in held_out:
            continue
        answer = answers[(gold["question_id"], gold["model"], gold["setting"])]
        verdict, _ = grade_check(answer, checks[(gold["question_id"], gold["check_id"])])
        rows.append(gold | {"verdict": verdict})
    verdicts = write_jsonl(tmp_path / "offline.jsonl", rows)
    result = invoke("agreement", "--verdicts", str(verdicts), "--json", "--resamples", "100")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    page = Path(__file__).resolve().parents[2] / "docs" / "sample.md"
    readme = " ".join(page.read_text().split())
    match = re.search(r"held out, it agrees with the reference labels on ([\d.]+)% of checks "
                      r"\(Cohen's kappa ([\d.]+)\)", readme)  # fmt: skip
    assert match is not None
    assert report["matching"]["compared"] == len(rows)
    assert report["matching"]["only_gold"] == 1272 - len(rows)  # the tuning half's labels
    assert 100 * report["overall"]["accuracy"]["value"] == pytest.approx(float(match[1]), abs=0.05)
    assert report["overall"]["cohen_kappa"]["value"] == pytest.approx(float(match[2]), abs=0.0005)
    assert report["overall"]["units"] == 6
