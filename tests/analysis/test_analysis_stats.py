"""The report's statistics against values computed by hand: rank statistics, the
bootstrap, and per-check agreement (kappa and ordinal alpha) on aligned verdict rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings, strategies as st

from gamut_eval.analysis._agreement import check_agreement_rows
from gamut_eval.analysis._rankings import gap_spread
from gamut_eval.analysis._rundata import cube_from_scores
from gamut_eval.analysis._stats import (
    Bootstrap,
    cohen_kappa,
    kendall_tau_b,
    krippendorff_alpha_ordinal,
    nanmean,
    pearson,
    ranks,
    resample_weights,
    swapped_pairs,
)
from gamut_eval.errors import ValidationError
from gamut_eval.scoring import score_table

# -- rank statistics -------------------------------------------------------------------------


def test_kendall_tau_b_with_ties_by_hand() -> None:
    x = [1, 2, 2, 3]
    y = [1, 3, 2, 2]
    # Pairs (i, j), sign of x_i - x_j times sign of y_i - y_j:
    #   (0,1) -1*-1 = +1   (0,2) -1*-1 = +1   (0,3) -1*-1 = +1
    #   (1,2)  0* +1 = 0 (tied in x)          (1,3) -1*+1 = -1
    #   (2,3) -1*  0 = 0 (tied in y)
    # n_c = 3, n_d = 1, n_0 = 6 pairs, n_1 = 1 tie in x, n_2 = 1 tie in y.
    # tau_b = (3 - 1) / sqrt((6 - 1) * (6 - 1)) = 2 / 5
    assert float(kendall_tau_b(x, y)) == pytest.approx(0.4)


def test_kendall_tau_b_identical_reversed_and_undefined() -> None:
    assert float(kendall_tau_b([3, 2, 1], [30, 20, 10])) == pytest.approx(1.0)
    assert float(kendall_tau_b([3, 2, 1], [10, 20, 30])) == pytest.approx(-1.0)
    assert math.isnan(float(kendall_tau_b([1, 1, 1], [1, 2, 3])))  # no untied pair in x


def test_kendall_tau_b_leaves_out_missing_models_and_broadcasts() -> None:
    # The NaN model is dropped: [1, 2, 3] vs [1, 2, 3] is a perfect agreement.
    assert float(kendall_tau_b([1, np.nan, 2, 3], [1, 5, 2, 3])) == pytest.approx(1.0)
    batch = kendall_tau_b([[1, 2, 3], [1, 2, 3]], [[1, 2, 3], [3, 2, 1]])
    assert batch.tolist() == pytest.approx([1.0, -1.0])


def test_pearson_by_hand() -> None:
    # x deviations -1, 0, 1; y deviations -2, 1, 1 (mean 3): sum dx*dy = 2 + 0 + 1 = 3,
    # sum dx^2 = 2, sum dy^2 = 6: r = 3 / sqrt(12).
    assert float(pearson([1, 2, 3], [1, 4, 4])) == pytest.approx(3 / math.sqrt(12))
    assert math.isnan(float(pearson([1, 1, 1], [1, 2, 3])))


def test_ranks_share_ties_and_put_missing_last() -> None:
    assert ranks([0.5, 0.9, 0.5, np.nan, 0.1]).tolist() == [2, 1, 2, 5, 4]


def test_swapped_pairs_and_adjacency() -> None:
    # a ranks m0 > m1 > m2 > m3; b ranks m3 > m0 > m2 > m1.
    a = [0.9, 0.7, 0.6, 0.1]
    b = [0.8, 0.5, 0.6, 0.85]
    swaps = {(p.higher_in_a, p.higher_in_b): p.adjacent for p in swapped_pairs(a, b)}
    # m1/m2 are neighbours in both (ranks 2-3 under a, 4-3 under b): an adjacent swap.
    # m3 jumps from last to first, so it is swapped with every model, never adjacently
    # in both rankings (m2-m3 are neighbours under a only).
    assert swaps == {(1, 2): True, (0, 3): False, (1, 3): False, (2, 3): False}
    near = swapped_pairs([0.9, 0.7, 0.6], [0.9, 0.6, 0.7])
    assert [(p.higher_in_a, p.higher_in_b, p.adjacent) for p in near] == [(1, 2, True)]


def test_gap_spread_is_the_sample_standard_deviation() -> None:
    # [0.1, 0.15, 0.2]: deviations -0.05, 0, 0.05; variance 0.005 / 2 = 0.0025; sd 0.05.
    assert float(gap_spread([0.1, 0.15, 0.2])) == pytest.approx(0.05)
    assert math.isnan(float(gap_spread([0.3])))


# -- bootstrap --------------------------------------------------------------------------------


def test_resample_weights_are_the_seeded_draws_counted() -> None:
    weights = resample_weights(5, 4, np.random.default_rng(7))
    draws = np.random.default_rng(7).integers(0, 5, size=(4, 5))
    expected = np.stack([np.bincount(row, minlength=5) for row in draws])
    assert weights.tolist() == expected.tolist()
    assert weights.sum(axis=1).tolist() == [5, 5, 5, 5]  # each resample has n questions


def test_bootstrap_interval_from_given_resamples_by_hand() -> None:
    # Two questions scored 0.2 and 0.6; three resamples drew (q1, q1), (q1, q2), (q2, q2).
    boot = Bootstrap(np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 2.0]]), confidence=0.5, seed=0)
    means = boot.means([0.2, 0.6])
    assert float(means.point) == pytest.approx(0.4)
    assert means.boot.tolist() == pytest.approx([0.2, 0.4, 0.6])
    # The 25th and 75th percentiles of [0.2, 0.4, 0.6] (linear interpolation): 0.3, 0.5.
    low, high = boot.interval(means.boot)
    assert (float(low), float(high)) == pytest.approx((0.3, 0.5))


def test_bootstrap_leaves_out_missing_scores_in_each_resample() -> None:
    boot = Bootstrap(np.array([[1.0, 1.0, 1.0], [0.0, 3.0, 0.0]]), confidence=0.95, seed=0)
    means = boot.means([0.2, np.nan, 0.8])
    assert float(means.point) == pytest.approx(0.5)
    # Resample 2 drew only the question without a score: its mean is undefined (NaN).
    assert means.boot[0] == pytest.approx(0.5)
    assert math.isnan(means.boot[1])


def test_same_seed_same_interval_other_seed_other_interval() -> None:
    values = np.random.default_rng(1).normal(size=200)
    first = Bootstrap.draw(200, 500, seed=3, confidence=0.95)
    again = Bootstrap.draw(200, 500, seed=3, confidence=0.95)
    other = Bootstrap.draw(200, 500, seed=4, confidence=0.95)
    interval = first.interval(first.means(values).boot)
    assert again.interval(again.means(values).boot) == interval
    assert other.interval(other.means(values).boot) != interval


def test_interval_contains_the_mean_and_collapses_without_variation() -> None:
    boot = Bootstrap.draw(10, 1000, seed=0, confidence=0.95)
    values = np.arange(10.0)  # mean 4.5; resampled means spread symmetrically around it
    low, high = boot.interval(boot.means(values).boot)
    assert float(low) < 4.5 < float(high)
    assert float(high) - float(low) < 9  # narrower than the range of the data
    low, high = boot.interval(boot.means(np.full(10, 0.3)).boot)
    assert (float(low), float(high)) == pytest.approx((0.3, 0.3))


def test_two_point_data_interval_spans_both_values() -> None:
    # Questions scored 0 and 1: a resample mean is 0 with probability 1/4, 1 with 1/4,
    # 0.5 with 1/2, so the 2.5th percentile of 1000 resamples is 0 and the 97.5th is 1.
    boot = Bootstrap.draw(2, 1000, seed=0, confidence=0.95)
    low, high = boot.interval(boot.means([0.0, 1.0]).boot)
    assert (float(low), float(high)) == (0.0, 1.0)


def test_subset_bootstrap_is_seeded_and_sized_by_the_subset() -> None:
    boot = Bootstrap.draw(6, 50, seed=0, confidence=0.95)
    mask = np.array([True, False, True, False, True, False])
    sub = boot.subset(mask, key=1)
    assert sub.weights.shape == (50, 3)
    assert np.array_equal(sub.weights, boot.subset(mask, key=1).weights)
    assert not np.array_equal(sub.weights, boot.subset(mask, key=2).weights)


def test_nanmean_without_values_is_nan_without_a_warning() -> None:
    assert math.isnan(float(nanmean([np.nan, np.nan])))


# -- per-check agreement ---------------------------------------------------------------------


def _verdict_rows(judged: dict[str, list[str | None]], question: str = "q1") -> pd.DataFrame:
    rows = []
    for judge, verdicts in judged.items():
        for k, verdict in enumerate(verdicts):
            rows.append(
                {
                    "question_id": question,
                    "model": "m/a",
                    "setting": "multimodal",
                    "judge": judge,
                    "check_id": f"c{k}",
                    "tier": "answer_critical",
                    "verdict": verdict,
                }
            )
    return pd.DataFrame(rows)


def _agreement(verdicts: pd.DataFrame) -> list[dict[str, object]]:
    cube = cube_from_scores(score_table(verdicts))
    boot = Bootstrap.draw(len(cube.questions), 50, seed=0, confidence=0.95)
    return [r.model_dump() for r in check_agreement_rows(verdicts, cube, boot)]


def test_pairwise_kappa_and_ordinal_alpha_by_hand() -> None:
    a = ["meets", "meets", "missing", "contradicts", "meets"]
    b = ["meets", "partially_meets", "missing", "missing", None]  # the last is unscored
    (row,) = _agreement(_verdict_rows({"A": a, "B": b}))
    # Units graded by both: the first four. Agreement 2/4.
    # Marginals A: meets 2, missing 1, contradicts 1; B: meets 1, partial 1, missing 2.
    # p_e = (2*1 + 1*2) / 16 = 1/4; kappa = (1/2 - 1/4) / (3/4) = 1/3.
    assert row["checks"] == 4
    assert row["agreement"] == pytest.approx(0.5)
    assert row["kappa"] == pytest.approx(1 / 3)
    assert row["kappa"] == pytest.approx(cohen_kappa(a[:4], b[:4]))
    # Ordinal alpha, values c(ontradicts)=0 < s(missing)=1 < p=2 < m=3. Coincidences:
    # o33 = 2, o32 = o23 = 1, o11 = 2, o01 = o10 = 1; n_c = (1, 3, 1, 3), n = 8.
    # delta^2: (0,1) 4, (0,2) 16, (0,3) 36, (1,2) 4, (1,3) 16, (2,3) 4.
    # observed sum o*delta^2 = 4 + 4 + 4 + 4 = 16;
    # expected sum n_c n_k delta^2 = 2 * (12 + 16 + 108 + 12 + 144 + 12) = 608.
    # alpha = 1 - (n - 1) * 16 / 608 = 1 - 112 / 608 = 31 / 38.
    assert row["alpha"] == pytest.approx(31 / 38)
    assert row["scope"] == "pair"


def test_all_judges_ordinal_alpha_by_hand() -> None:
    a = ["meets", "missing", "contradicts"]
    b = ["meets", "missing", "missing"]
    c = ["partially_meets", None, "missing"]
    rows = _agreement(_verdict_rows({"A": a, "B": b, "C": c}))
    (every,) = [r for r in rows if r["scope"] == "all"]
    # Unit 1 (3 raters, weight 1/2): o33 += 1, o32 += 1, o23 += 1.
    # Unit 2 (2 raters, weight 1): o11 += 2.
    # Unit 3 (3 raters, weight 1/2): o01 += 1, o10 += 1, o11 += 1.
    # n_c = (1, 4, 1, 2), n = 8. delta^2: (0,1) 6.25, (0,2) 25, (0,3) 42.25, (1,2) 6.25,
    # (1,3) 16, (2,3) 2.25. observed = 2 * 2.25 + 2 * 6.25 = 17;
    # expected = 2 * (25 + 25 + 84.5 + 25 + 128 + 4.5) = 584.
    # alpha = 1 - 7 * 17 / 584 = 465 / 584.
    assert every["alpha"] == pytest.approx(465 / 584)
    assert every["checks"] == 3
    assert every["kappa"] is None
    assert len(rows) == 4  # three pairs and the all-judges row


def test_agreement_intervals_are_seeded_and_bracket_the_value() -> None:
    rng = np.random.default_rng(0)
    names = np.array(["contradicts", "missing", "partially_meets", "meets"], dtype=object)
    frames = []
    for q in range(30):
        truth = rng.integers(0, 4, size=8)
        noisy = np.where(rng.random(8) < 0.3, rng.integers(0, 4, size=8), truth)
        frames.append(_verdict_rows({"A": list(names[truth]), "B": list(names[noisy])}, f"q{q}"))
    verdicts = pd.concat(frames, ignore_index=True)
    (row,) = _agreement(verdicts)
    assert row["kappa_low"] <= row["kappa"] <= row["kappa_high"]
    assert row["alpha_low"] <= row["alpha"] <= row["alpha_high"]
    assert _agreement(verdicts) == [row]


def test_unknown_verdicts_are_refused() -> None:
    verdicts = _verdict_rows({"A": ["meets"], "B": ["meets"]})
    cube = cube_from_scores(score_table(verdicts))
    verdicts.loc[0, "verdict"] = "mostly meets"
    boot = Bootstrap.draw(1, 5, seed=0, confidence=0.95)
    with pytest.raises(ValidationError, match="unknown verdict"):
        check_agreement_rows(verdicts, cube, boot)


# -- cross-checks against plain implementations ----------------------------------------------

_VERDICT = st.sampled_from(["meets", "partially_meets", "missing", "contradicts"])


def _naive_tau_b(x: list[int], y: list[int]) -> float:
    concordant = discordant = tied_x = tied_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            tied_x += dx == 0
            tied_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    pairs = len(x) * (len(x) - 1) // 2
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=3, max_size=12))
def test_kendall_tau_b_equals_the_pairwise_definition(pairs: list[tuple[int, int]]) -> None:
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    assume(len(set(x)) > 1 and len(set(y)) > 1)
    assert float(kendall_tau_b(x, y)) == pytest.approx(_naive_tau_b(x, y))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_VERDICT, st.one_of(st.none(), _VERDICT)), min_size=2, max_size=40))
def test_aligned_agreement_equals_the_label_list_statistics(
    pairs: list[tuple[str, str | None]],
) -> None:
    a: list[str | None] = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    graded = [(x, y) for x, y in pairs if y is not None]
    assume(graded)
    (row,) = _agreement(_verdict_rows({"A": a, "B": b}))
    left, right = [g[0] for g in graded], [g[1] for g in graded]
    assert row["checks"] == len(graded)
    assert row["kappa"] == pytest.approx(cohen_kappa(left, right))
    assert row["alpha"] == pytest.approx(krippendorff_alpha_ordinal(left, right))
