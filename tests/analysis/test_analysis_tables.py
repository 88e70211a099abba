"""Leaderboard, judge robustness and modality on small constructed score tables, against
values computed by hand (the constructions make every number exact)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gamut_eval.analysis import RunData, build_report
from gamut_eval.analysis._rankings import leaderboard_rows
from gamut_eval.analysis._report import ReportConfig
from gamut_eval.analysis._rundata import cube_from_scores
from gamut_eval.analysis._stats import Bootstrap
from gamut_eval.errors import ValidationError

QUESTION_EFFECTS = [0.0, 0.1, -0.1, 0.2]  # mean 0.05, shared by every model and judge
BASE = {"alpha/m1": 0.5, "beta/m2": 0.3, "gamma/m3": 0.1, "delta/m4": -0.1}
LENIENCY = {"alpha/judge": 0.0, "beta/judge": 0.05, "gamma/judge": 0.10}
INFLATION = 0.08  # what alpha/judge adds to its own family's answers


def _scores(score: dict[tuple[str, str, str], float]) -> list[dict]:
    """Per-question rows: each (setting, model, judge) value plus the question effects."""
    return [
        {"question_id": f"q{i}", "model": model, "setting": s, "judge": judge,
         "gamut": value + effect}
        for (s, model, judge), value in score.items()
        for i, effect in enumerate(QUESTION_EFFECTS)
    ]  # fmt: skip


def _self_preference_run() -> RunData:
    score = {
        ("multimodal", model, judge): base
        + LENIENCY[judge]
        + (INFLATION if judge == "alpha/judge" and model == "alpha/m1" else 0.0)
        for model, base in BASE.items()
        for judge in LENIENCY
    }
    return RunData(scores=pd.DataFrame(_scores(score)), judges=tuple(LENIENCY))


def _by(rows: list, **keys: str) -> dict:
    (row,) = [r for r in rows if all(getattr(r, k) == v for k, v in keys.items())]
    return row.model_dump()


def test_self_preference_finds_the_inflation() -> None:
    report = build_report(_self_preference_run(), ReportConfig(resamples=200))
    alpha = _by(report.self_preference, judge="alpha/judge")
    # alpha/judge vs the mean of beta and gamma (the judges of other families):
    # its own model m1: 0.08 + 0 - (0.05 + 0.10) / 2 = 0.005; the others: -0.075 each.
    assert alpha["own_offset"] == pytest.approx(0.005)
    assert alpha["other_offset"] == pytest.approx(-0.075)
    assert alpha["self_preference"] == pytest.approx(INFLATION)
    # Every question has the same differences, so every resample finds exactly 0.08.
    assert alpha["self_preference_low"] == pytest.approx(INFLATION)
    assert alpha["self_preference_high"] == pytest.approx(INFLATION)
    assert (alpha["own_models"], alpha["other_models"]) == (1, 3)
    assert alpha["reference_judges"] == "beta/judge; gamma/judge"
    # beta/judge: own m2: 0.05 - (0 + 0.10) / 2 = 0; others: m1 0.05 - (0.08 + 0.10) / 2 =
    # -0.04, m3 and m4 0: mean -0.04 / 3. Its self-preference is +0.04 / 3: the inflation
    # of another judge leaks into it (documented in docs/report.md).
    beta = _by(report.self_preference, judge="beta/judge")
    assert beta["self_preference"] == pytest.approx(0.04 / 3)


def test_leniency_offsets_by_hand() -> None:
    report = build_report(_self_preference_run(), ReportConfig(resamples=50))
    # Offset of judge j on model m: its score minus the mean of the two other judges.
    # alpha: m1 0.08 - (0.05 + 0.10) / 2 = 0.005, m2..m4 -0.075: mean -0.055.
    # beta: m1 0.05 - (0.08 + 0.10) / 2 = -0.04, others 0: mean -0.01.
    # gamma: m1 0.10 - (0.08 + 0.05) / 2 = 0.035, others 0.075: mean 0.065.
    expected = {"alpha/judge": (-0.055, -0.075, 0.005), "beta/judge": (-0.01, -0.04, 0.0),
                "gamma/judge": (0.065, 0.035, 0.075)}  # fmt: skip
    for judge, (offset, low, high) in expected.items():
        row = _by(report.leniency, judge=judge)
        assert (row["offset"], row["offset_min"], row["offset_max"]) == pytest.approx(
            (offset, low, high)
        )
        assert row["offset_low"] == pytest.approx(offset)  # no variation across questions


def test_judge_pairs_gaps_and_ranking_agreement() -> None:
    report = build_report(_self_preference_run(), ReportConfig(resamples=50))
    pair = _by(report.judge_pairs, judge_a="alpha/judge", judge_b="beta/judge")
    # Same order under both judges: tau 1, no swaps. Gaps alpha - beta: m1 0.08 - 0.05 =
    # 0.03, the others -0.05 (the largest in absolute value; the first such model wins).
    assert pair["tau_b"] == pytest.approx(1.0)
    assert pair["swapped_pairs"] == 0
    assert pair["mean_gap"] == pytest.approx((0.03 - 3 * 0.05) / 4)
    assert pair["max_abs_gap"] == pytest.approx(0.05)
    gap = _by(report.judge_gaps, model="alpha/m1", judge_a="alpha/judge", judge_b="beta/judge")
    assert (gap["gap"], gap["gap_low"], gap["gap_high"]) == pytest.approx((0.03, 0.03, 0.03))
    assert len(report.judge_scores) == 12
    score = _by(report.judge_scores, model="alpha/m1", judge="alpha/judge")
    assert score["gamut"] == pytest.approx(0.5 + 0.05 + 0.08)
    assert score["offset"] == pytest.approx(0.005)


def test_families_can_be_overridden() -> None:
    # Mapping every judge to one family leaves no judge of another family to compare.
    config = ReportConfig(resamples=20, families={"*/judge": "same"})
    report = build_report(_self_preference_run(), config)
    row = _by(report.self_preference, judge="alpha/judge")
    assert row["self_preference"] is None
    assert "no judge of another family" in row["note"]
    assert {f.model: f.source for f in report.families}["beta/judge"] == "mapping"


def test_a_rank_swap_between_judges_is_reported() -> None:
    score = {
        ("multimodal", "p/a", "j/1"): 0.6, ("multimodal", "p/b", "j/1"): 0.5,
        ("multimodal", "p/c", "j/1"): 0.1, ("multimodal", "p/a", "j/2"): 0.6,
        ("multimodal", "p/b", "j/2"): 0.45, ("multimodal", "p/c", "j/2"): 0.5,
    }  # fmt: skip
    report = build_report(RunData(scores=pd.DataFrame(_scores(score))), ReportConfig(resamples=20))
    # j/1: a > b > c; j/2: a > c > b. One discordant pair of three: tau = (2 - 1) / 3.
    assert report.judge_pairs[0].tau_b == pytest.approx(1 / 3)
    (swap,) = report.rank_swaps
    assert (swap.higher_in_a, swap.higher_in_b, swap.adjacent) == ("p/b", "p/c", True)
    assert (swap.gap_a, swap.gap_b) == pytest.approx((0.4, 0.05))


def test_modality_gap_by_hand() -> None:
    multimodal = {"p/a": 0.6, "p/b": 0.4, "p/c": 0.2}
    gap = {"p/a": 0.10, "p/b": 0.15, "p/c": 0.45}
    score = {("multimodal", m, "j/1"): v for m, v in multimodal.items()}
    score |= {("text_only", m, "j/1"): v + gap[m] for m, v in multimodal.items()}
    report = build_report(RunData(scores=pd.DataFrame(_scores(score))), ReportConfig(resamples=100))
    by_model = {r.model: r for r in report.modality}
    for model, expected in gap.items():
        row = by_model[model]
        assert (row.gap, row.gap_low, row.gap_high) == pytest.approx((expected,) * 3)
        assert row.multimodal == pytest.approx(multimodal[model] + 0.05)
    assert [r.model for r in report.modality] == ["p/a", "p/b", "p/c"]  # multimodal order
    (summary,) = report.modality_summary
    # Text-only: a 0.75, b 0.60, c 0.70: b and c swap. tau = (2 - 1) / 3.
    assert summary.tau_b == pytest.approx(1 / 3)
    assert summary.swapped_pairs == 1
    # Gaps (x100) 10, 15, 45: mean 70/3, deviations -40/3, -25/3, 65/3;
    # sample sd = sqrt((1600 + 625 + 4225) / 9 / 2) / 100.
    assert summary.gap_mean == pytest.approx(0.7 / 3)
    assert summary.gap_sd == pytest.approx(math.sqrt(6450 / 9 / 2) / 100)
    # Multimodal deviations (x100) 20, 0, -20: sum dx*dy = -800/3 - 1300/3 = -700,
    # sum dx^2 = 6450 / 9, sum dy^2 = 800.
    assert summary.gap_corr == pytest.approx(-700 / math.sqrt(6450 / 9 * 800))
    assert [(s.comparison, s.context) for s in report.rank_swaps] == [("settings", "j/1")]


def test_modality_needs_both_settings() -> None:
    score = {("multimodal", "p/a", "j/1"): 0.5, ("multimodal", "p/b", "j/1"): 0.3}
    report = build_report(RunData(scores=pd.DataFrame(_scores(score))), ReportConfig(resamples=5))
    assert report.modality == []
    assert report.modality_summary == []
    assert any("text_only" in note for note in report.meta.notes)
    assert any("one judge" in note for note in report.meta.notes)
    assert report.judge_pairs == []
    assert report.self_preference == []


def _counts(meets: int, partial: int, missing: int, contradicts: int, unscored: int) -> dict:
    values = {"meets": meets, "partially_meets": partial, "missing": missing,
              "contradicts": contradicts, "unscored": unscored}  # fmt: skip
    return {f"answer_critical.{k}": v for k, v in values.items()}


def test_leaderboard_shares_and_rates_by_hand() -> None:
    scores = pd.DataFrame(
        [
            {"question_id": "q1", "model": "m", "setting": "multimodal", "judge": "j",
             "gamut": 0.2, "answer_critical": 0.2, **_counts(2, 0, 1, 1, 1)},
            {"question_id": "q2", "model": "m", "setting": "multimodal", "judge": "j",
             "gamut": 0.6, "answer_critical": 0.6, **_counts(3, 1, 0, 0, 0)},
        ]
    )  # fmt: skip
    cube = cube_from_scores(scores)
    boot = Bootstrap.draw(2, 100, seed=0, confidence=0.95)
    (row,) = leaderboard_rows(cube, boot.means(cube.gamut), boot)
    # q1 scored 4 checks: meets 1/2, missing 1/4, contradicts 1/4; q2: meets 3/4, partial
    # 1/4. Averaged over the two questions: 5/8, 1/8, 1/8, 1/8. Unscored: 1 of 9 checks.
    assert row.gamut == pytest.approx(0.4)
    assert row.share_meets == pytest.approx(5 / 8)
    assert row.share_partially_meets == pytest.approx(1 / 8)
    assert row.omission_rate == pytest.approx(1 / 8)
    assert row.contradiction_rate == pytest.approx(1 / 8)
    assert row.unscored_rate == pytest.approx(1 / 9)
    assert row.valuable is None  # no Valuable check at all
    assert (row.gamut_low, row.gamut_high) == pytest.approx((0.2, 0.6))
    assert (row.rank, row.responses, row.scored) == (1, 2, 2)


def test_duplicate_score_rows_are_refused() -> None:
    rows = [{"question_id": "q", "model": "m", "setting": "s", "judge": "j", "gamut": 0.1}] * 2
    with pytest.raises(ValidationError, match="two score rows for one response"):
        cube_from_scores(pd.DataFrame(rows))


def test_leaderboard_counts_unscored_responses_and_flags_unpaired_rows() -> None:
    def score(q: str, model: str, gamut: float, judge: str = "j") -> dict:
        return {"question_id": q, "model": model, "setting": "multimodal", "judge": judge,
                "gamut": gamut, "answer_critical": gamut, **_counts(1, 0, 0, 0, 0)}  # fmt: skip

    nan = float("nan")
    scores = pd.DataFrame(
        [
            score("q1", "a", 0.5), score("q2", "a", 0.3), score("q3", "a", 0.1),
            # b's q2 has no Gamut score (a tier was ungraded); b has no answer to q3.
            score("q1", "b", 0.9), score("q2", "b", nan),
            # Judge k sees only model c, on q1 and q2: nothing to compare it against.
            score("q1", "c", 0.2, "k"), score("q2", "c", 0.4, "k"),
        ]
    )  # fmt: skip
    cube = cube_from_scores(scores)
    boot = Bootstrap.draw(len(cube.questions), 50, seed=0, confidence=0.95)
    rows = {(r.judge, r.model): r for r in leaderboard_rows(cube, boot.means(cube.gamut), boot)}
    a, b, c = rows[("j", "a")], rows[("j", "b")], rows[("k", "c")]
    # a: (0.5 + 0.3 + 0.1) / 3 = 0.3 over q1, q2, q3; b: 0.9 over q1 alone.
    assert a.gamut == pytest.approx(0.3)
    assert b.gamut == pytest.approx(0.9)
    assert (a.responses, a.scored, a.unscored, a.missing_questions, a.paired) == (3, 3, 0, 0, True)
    # b lacks q2 (unscored) and q3 (no answer), both scored for a.
    assert (b.responses, b.scored, b.unscored, b.missing_questions, b.paired) == (
        2, 1, 1, 2, False,
    )  # fmt: skip
    # The questions of judge j do not count against judge k's rows.
    assert (c.scored, c.missing_questions, c.paired) == (2, 0, True)
