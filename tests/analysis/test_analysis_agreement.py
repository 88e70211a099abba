"""Agreement statistics against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gamut_eval.analysis import accuracy, cohen_kappa, confusion_matrix
from gamut_eval.analysis._stats import (
    VERDICT_ORDER,
    bootstrap_agreement,
    krippendorff_alpha_ordinal,
    table_alpha_ordinal,
    table_kappa,
    verdict_table,
)

M, P, S, C = "meets", "partially_meets", "missing", "contradicts"


def test_kappa_by_hand() -> None:
    a = ["m", "m", "m", "s", "s", "c", "m", "s", "c", "m"]
    b = ["m", "m", "s", "s", "s", "c", "m", "m", "s", "m"]
    # p_o = 7/10. Marginals a: m5 s3 c2; b: m5 s4 c1.
    # p_e = (5*5 + 3*4 + 2*1) / 100 = 39/100. kappa = (0.70 - 0.39) / 0.61
    assert accuracy(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.31 / 0.61)


def test_kappa_perfect_and_chance() -> None:
    assert cohen_kappa(["x", "y", "x"], ["x", "y", "x"]) == pytest.approx(1.0)
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0  # one label throughout: 0/0 avoided
    # Independent-looking raters: p_o = 0.5, p_e = 0.5 -> 0.
    assert cohen_kappa(["x", "x", "y", "y"], ["x", "y", "x", "y"]) == pytest.approx(0.0)


def test_confusion_matrix_rows_are_first_rater() -> None:
    assert confusion_matrix(["a", "a", "b"], ["a", "b", "b"], ["a", "b"]) == [[1, 1], [0, 1]]


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        accuracy(["a"], ["a", "b"])


# -- Krippendorff's alpha, ordinal ------------------------------------------------------------


def test_verdict_order_ranks_a_contradiction_below_an_omission() -> None:
    assert VERDICT_ORDER == (C, S, P, M)


def test_alpha_ordinal_with_even_marginals_by_hand() -> None:
    a = [M, M, P, S, S, C]
    b = [M, P, P, S, C, C]
    # Ranks c=0 (contradicts), 1 (missing), 2 (partial), 3 (meets). Units (a, b):
    # (3,3) (3,2) (2,2) (1,1) (1,0) (0,0). Values used over both raters: n_c = 3 each, n = 12.
    # Mid-ranks M_c = cumsum - n_c/2 = 1.5, 4.5, 7.5, 10.5, so delta = 3 per step apart:
    # delta^2 = 9 (1 apart), 36 (2 apart), 81 (3 apart).
    # sum o_ck delta^2: units (3,2) and (1,0), each counted in both orders: 2*9 + 2*9 = 36.
    # sum n_c n_k delta^2 (ordered pairs, n_c n_k = 9): 1 apart 6 pairs * 9 * 9 = 486,
    # 2 apart 4 * 9 * 36 = 1296, 3 apart 2 * 9 * 81 = 1458; total 3240.
    # alpha = 1 - (n - 1) * 36 / 3240 = 1 - 396/3240 = 1 - 11/90 = 79/90.
    assert krippendorff_alpha_ordinal(a, b) == pytest.approx(79 / 90)


def test_alpha_ordinal_with_uneven_marginals_by_hand() -> None:
    a = [M, M, M, S]
    b = [M, M, P, C]
    # n_c: contradicts 1, missing 1, partial 1, meets 3 + 2 = 5; n = 8.
    # Cumulative 1, 2, 3, 8 -> mid-ranks 0.5, 1.5, 2.5, 5.5. delta: (C,S) 1, (S,P) 1,
    # (P,M) 3, (C,P) 2, (S,M) 4, (C,M) 5 (e.g. (S,M): n_S + n_P + n_M - (n_S + n_M)/2 = 4).
    # sum o delta^2: unit (M,P) 2 * 9 + unit (S,C) 2 * 1 = 20.
    # sum n_c n_k delta^2 over unordered pairs: 1 + 1 + 5*9 + 4 + 5*16 + 5*25 = 256; x2 = 512.
    # alpha = 1 - 7 * 20 / 512 = 1 - 140/512 = 93/128.
    assert krippendorff_alpha_ordinal(a, b) == pytest.approx(93 / 128)


def test_alpha_ordinal_is_not_nominal() -> None:
    # Same number of disagreements, one step apart versus three: only ordinal tells them apart.
    near = krippendorff_alpha_ordinal([M, M, C, C], [M, P, C, C])
    far = krippendorff_alpha_ordinal([M, M, C, C], [M, C, C, C])
    assert near > far


def test_alpha_degenerate_cases() -> None:
    assert krippendorff_alpha_ordinal([M, M, M], [M, M, M]) == 1.0  # one value used: 0/0
    assert krippendorff_alpha_ordinal([M, S], [M, S]) == pytest.approx(1.0)
    # One unit, two different values: D_o = D_e, alpha = 0.
    assert krippendorff_alpha_ordinal([M], [S]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="no labels"):
        krippendorff_alpha_ordinal([], [])
    with pytest.raises(ValueError, match="unknown verdict 'great'"):
        krippendorff_alpha_ordinal([M], ["great"])
    with pytest.raises(ValueError, match="unknown verdict None"):
        verdict_table([M], [None])  # type: ignore[list-item]


def test_table_statistics_equal_the_label_ones() -> None:
    a = [M, M, P, S, S, C, M, S]
    b = [M, P, P, S, C, C, S, S]
    table = verdict_table(a, b)
    # Rows a, columns b, in VERDICT_ORDER (C, S, P, M); e.g. a=M, b=S once: row 3, column 1.
    assert table.tolist() == [[1, 0, 0, 0], [1, 2, 0, 0], [0, 0, 1, 0], [0, 1, 1, 1]]
    assert float(table_kappa(table)) == pytest.approx(cohen_kappa(a, b))
    stacked = np.stack([table, table])
    assert table_alpha_ordinal(stacked).tolist() == pytest.approx(
        [krippendorff_alpha_ordinal(a, b)] * 2
    )


# -- bootstrap --------------------------------------------------------------------------------


def _labels() -> tuple[list[str], list[str], list[str]]:
    a = [M, M, P, S, S, C, M, S, M, P, S, M] * 3
    b = [M, P, P, S, C, C, S, S, M, M, S, M] * 3
    clusters = [f"q{i // 4}" for i in range(len(a))]  # 9 questions of 4 checks
    return a, b, clusters


def test_bootstrap_is_deterministic_with_a_seed() -> None:
    a, b, clusters = _labels()
    first = bootstrap_agreement(a, b, clusters, n_resamples=200, seed=7)
    again = bootstrap_agreement(a, b, clusters, n_resamples=200, seed=7)
    other = bootstrap_agreement(a, b, clusters, n_resamples=200, seed=8)
    assert first == again
    assert first != other
    # The point values are the statistics on all the data, whatever the seed.
    assert first.accuracy.value == other.accuracy.value == accuracy(a, b)
    assert first.cohen_kappa.value == pytest.approx(cohen_kappa(a, b))
    assert first.krippendorff_alpha.value == pytest.approx(krippendorff_alpha_ordinal(a, b))
    assert (first.n, first.units) == (36, 9)
    for estimate in (first.accuracy, first.cohen_kappa, first.krippendorff_alpha):
        assert estimate.low <= estimate.value <= estimate.high


def test_bootstrap_resamples_whole_clusters() -> None:
    # Cluster A agrees on all 10 checks, cluster B on none. Resampling two clusters gives
    # AA (p 1/4, accuracy 1), AB or BA (p 1/2, accuracy 0.5), BB (p 1/4, accuracy 0), so
    # the 95% interval runs from 0 to 1. Resampling the 20 checks one by one would give a
    # narrow interval around 0.5.
    a = [M] * 20
    b = [M] * 10 + [S] * 10
    by_question = bootstrap_agreement(a, b, ["A"] * 10 + ["B"] * 10, n_resamples=400)
    assert by_question.accuracy.value == 0.5
    assert (by_question.accuracy.low, by_question.accuracy.high) == (0.0, 1.0)
    by_check = bootstrap_agreement(a, b, n_resamples=400)
    assert by_check.units == 20
    assert 0.2 < by_check.accuracy.low < 0.5 < by_check.accuracy.high < 0.8


def test_bootstrap_with_one_cluster_has_no_spread() -> None:
    a, b, _ = _labels()
    single = bootstrap_agreement(a, b, ["q"] * len(a), n_resamples=50)
    assert single.accuracy.low == single.accuracy.value == single.accuracy.high


def test_bootstrap_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_agreement([M], [M], n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_agreement([M], [M], confidence=1.0)
    with pytest.raises(ValueError, match="clusters differ in length"):
        bootstrap_agreement([M, M], [M, M], ["q"])
