"""The library numerics (scikit-learn's TF-IDF and k-means, SciPy's rank statistics) against
the outputs of the hand-written implementations they replaced.

``data/legacy_numerics.json`` holds what the hand-written code computed on the bundled
sample's questions, on 240 synthetic questions about four topics and on a set of seeded
rankings (with ties, a missing model and a constant ranking); the bootstrap is the
project's own and is checked against SciPy's percentile bootstrap instead.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import sparse, stats

from gamut_eval.analysis._diversity import cluster_centroids, kmeans, tfidf
from gamut_eval.analysis._stats import Bootstrap, kendall_tau_b, pearson, ranks

LEGACY: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "legacy_numerics.json").read_text(encoding="utf-8")
)


def _array(rows: list[list[float | None]]) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def _same_partition(a: list[int], b: list[int]) -> bool:
    """Equal up to a renumbering of the clusters."""
    pairs = Counter(zip(a, b, strict=True))
    return len(pairs) == len(set(a)) == len(set(b))


@pytest.mark.parametrize("case", ["sample", "synthetic", "synthetic_default_k"])
def test_tfidf_vectors_equal_the_hand_written_ones(case: str) -> None:
    old = LEGACY[case]
    x = tfidf(old["texts"])
    assert list(x.vocabulary) == old["vocabulary"]
    expected = sparse.csr_matrix(
        (old["weights"], old["columns"], old["indptr"]), shape=x.shape
    ).toarray()
    assert np.abs(x.dense() - expected).max() <= 1e-9


@pytest.mark.parametrize("case", ["sample", "synthetic"])
def test_kmeans_finds_the_hand_written_clusters(case: str) -> None:
    old = LEGACY[case]
    labels = kmeans(tfidf(old["texts"]), old["k"], old["seed"])
    assert _same_partition(labels.tolist(), old["labels"])


def test_kmeans_on_an_ambiguous_k_is_as_good_as_the_hand_written_one() -> None:
    # k = 11 on four topics has many near-equal optima: the partitions differ, but the
    # library's inertia (sum of squared distances to the centroids) is no worse than 1 %
    # above the old one's.
    old = LEGACY["synthetic_default_k"]
    x = tfidf(old["texts"])
    labels = kmeans(x, old["k"], old["seed"])
    centroids = cluster_centroids(x, labels, old["k"])
    inertia = float(((x.dense() - centroids[labels]) ** 2).sum())
    assert inertia <= old["inertia"] * 1.01
    assert len(set(labels.tolist())) == old["k"]


def test_rank_statistics_equal_the_hand_written_ones() -> None:
    old = LEGACY["rank"]
    x, y = _array(old["x"]), _array(old["y"])
    for got, want in ((kendall_tau_b(x, y), old["kendall"]), (pearson(x, y), old["pearson"])):
        expected = np.array([np.nan if v is None else v for v in want])
        assert np.array_equal(np.isnan(got), np.isnan(expected))
        assert np.nanmax(np.abs(got - expected)) <= 1e-12
    assert np.isnan(kendall_tau_b(x, y)[9])  # the constant ranking
    assert [ranks(row).tolist() for row in x] == old["ranks"]


def test_tau_b_equals_scipys_on_every_slice() -> None:
    # Ties, NaN and constant rankings, on 300 slices of 2 to 9 models; tau-b is vectorised
    # over the resamples, so SciPy is the reference it is held to.
    rng = np.random.default_rng(7)
    for n in range(2, 10):
        x = rng.integers(0, 4, size=(300, n)).astype(float)
        y = rng.integers(0, 4, size=(300, n)).astype(float)
        x[rng.random(x.shape) < 0.1] = np.nan
        x[0] = 1.0  # constant: undefined
        got = kendall_tau_b(x, y)
        for row in range(len(x)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = stats.kendalltau(x[row], y[row], variant="b", nan_policy="omit").statistic
            assert np.isnan(got[row]) == np.isnan(want), (n, row, x[row], y[row])
            if not np.isnan(want):
                assert abs(got[row] - want) <= 1e-12


def test_pearson_and_ranks_equal_scipys_on_every_slice() -> None:
    rng = np.random.default_rng(11)
    for n in range(2, 10):
        x = rng.normal(size=(200, n)).round(1)
        y = (x + rng.normal(size=(200, n))).round(1)
        x[rng.random(x.shape) < 0.1] = np.nan
        x[0] = 0.5  # constant: undefined
        got = pearson(x, y)
        for row in range(len(x)):
            keep = ~np.isnan(x[row])
            want = np.nan
            if keep.sum() >= 2 and np.ptp(x[row, keep]) > 0 and np.ptp(y[row, keep]) > 0:
                want = stats.pearsonr(x[row, keep], y[row, keep]).statistic
            assert np.isnan(got[row]) == np.isnan(want), (n, row)
            if not np.isnan(want):
                assert abs(got[row] - want) <= 1e-12
            scored = ranks(x[row])
            expected = stats.rankdata(-x[row, keep], method="min")
            assert scored[keep].tolist() == expected.astype(int).tolist()
            assert (scored[~keep] == keep.sum() + 1).all()


def test_bootstrap_interval_is_unchanged_and_agrees_with_scipy() -> None:
    old = LEGACY["bootstrap"]
    scores = _array(old["scores"])
    boot = Bootstrap.draw(scores.shape[1], old["resamples"], old["seed"], old["confidence"])
    means = boot.means(scores)
    low, high = boot.interval(means.boot)
    assert means.point.tolist() == pytest.approx(old["point"], abs=1e-12)
    assert low.tolist() == pytest.approx(old["low"], abs=1e-12)
    assert high.tolist() == pytest.approx(old["high"], abs=1e-12)
    # SciPy's percentile bootstrap draws other resamples: the bounds agree to a fraction
    # of the interval's width (0.1 of it at 2,000 resamples).
    for model in range(scores.shape[0]):
        values = scores[model][~np.isnan(scores[model])]
        ci = stats.bootstrap(
            (values,), np.mean, n_resamples=old["resamples"], method="percentile",
            confidence_level=old["confidence"], rng=np.random.default_rng(1),
        ).confidence_interval  # fmt: skip
        width = high[model] - low[model]
        assert abs(ci.low - low[model]) < 0.1 * width
        assert abs(ci.high - high[model]) < 0.1 * width
