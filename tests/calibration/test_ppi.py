"""The prediction-powered mean: hand-computed values, the reference library, exact
finite-population properties and the unscored rules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gamut_eval.calibration import normal_cdf, ppi_mean, t_value, z_value


def test_finite_population_by_hand() -> None:
    # Six questions, three sampled; lam fixed at 1 (plain PPI).
    # cheap mean over all six = 4/6; residuals y - f = 0, -1, 1 (mean 0, variance 1);
    # variance = (1 - 3/6) * 1 / 3 = 1/6.
    est = ppi_mean([1.0, 0.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0], lam=1.0)
    assert float(est.estimate) == pytest.approx(4 / 6)
    assert float(est.standard_error) == pytest.approx(math.sqrt(1 / 6))
    # Student t with 2 degrees of freedom: 0.95 / sqrt(2 * 0.975 * 0.025) = 4.302653
    assert float(est.ci_low) == pytest.approx(4 / 6 - 4.302653 * math.sqrt(1 / 6), abs=1e-6)
    assert int(est.n_answers) == 6
    assert int(est.n_calibration) == 3
    assert float(est.cheap_mean) == pytest.approx(4 / 6)
    assert float(est.strong_mean) == pytest.approx(2 / 3)
    # strong alone: variance of y (1/3) * (1 - 1/2) / 3 = 1/18
    assert float(est.strong_standard_error) == pytest.approx(math.sqrt(1 / 18))
    assert float(est.width_ratio) == pytest.approx(math.sqrt(3))


def test_tuned_weight_is_the_regression_slope_clipped() -> None:
    y = np.array([0.2, 0.4, 0.9, 0.5])
    f = np.array([0.3, 0.5, 0.8, 0.6])
    rest = np.array([0.1, 0.7])
    everything = np.concatenate([f, rest])
    slope = np.cov(y, f)[0, 1] / np.var(everything, ddof=1)
    est = ppi_mean(y, f, rest)
    assert float(est.lam) == pytest.approx(min(max(slope, 0.0), 1.0))
    # A cheap judge that moves against the truth gets no weight: the strong sample alone.
    against = ppi_mean(y, 1.0 - y, rest)
    assert float(against.lam) == 0.0
    assert float(against.estimate) == pytest.approx(y.mean())


def test_finite_population_is_unbiased_with_exact_variance_over_every_sample() -> None:
    # Every sample of 3 of 8 questions: with lam fixed the estimate is unbiased for the
    # population mean and the mean estimated variance equals the estimate's true variance.
    strong = np.array([0.9, 0.1, 0.5, 0.7, 0.3, 1.0, 0.0, 0.6])
    cheap = np.array([1.0, 0.4, 0.5, 0.9, 0.2, 1.0, 0.3, 0.8])
    samples = np.array(list(itertools.combinations(range(8), 3)))
    rest = np.array([[i for i in range(8) if i not in s] for s in samples])
    est = ppi_mean(strong[samples], cheap[samples], cheap[rest], lam=0.7)
    assert est.estimate.shape == (56,)
    assert est.estimate.mean() == pytest.approx(strong.mean())
    assert (est.standard_error**2).mean() == pytest.approx(est.estimate.var())


def test_unscored_answers_leave_the_sample_or_the_population() -> None:
    nan = float("nan")
    # Sampled: strong unscored on the 2nd (it counts as not sampled), cheap unscored on the
    # 3rd (outside the population). Not sampled: one cheap-unscored answer.
    est = ppi_mean([1.0, nan, 0.0, 0.5], [1.0, 0.5, nan, 0.25], [0.0, nan], lam=1.0)
    same = ppi_mean([1.0, 0.5], [1.0, 0.25], [0.5, 0.0], lam=1.0)
    for field in ("estimate", "standard_error", "n_answers", "n_calibration", "cheap_mean"):
        assert float(getattr(est, field)) == pytest.approx(float(getattr(same, field)))
    assert int(est.n_answers) == 4
    assert int(est.n_calibration) == 2


def test_no_sample_gives_no_estimate_and_a_full_sample_gives_the_truth() -> None:
    nothing = ppi_mean([float("nan")], [0.5], [0.2, 0.4])
    assert math.isnan(float(nothing.estimate))
    assert math.isnan(float(nothing.ci_low))
    everything = ppi_mean([0.1, 0.9, 0.5], [0.5, 0.5, 0.2], np.zeros(0))
    assert float(everything.estimate) == pytest.approx(0.5)
    assert float(everything.standard_error) == 0.0


def test_normal_helpers() -> None:
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert normal_cdf([0.0, 1.959964, float("nan")])[:2] == pytest.approx([0.5, 0.975])
    assert math.isnan(normal_cdf([float("nan")])[0])
    with pytest.raises(ValueError, match="confidence"):
        z_value(1.0)
    # Student t quantiles (tables): exact at 1 and 2 degrees of freedom, the expansion on.
    table = {1: 12.7062, 2: 4.3027, 3: 3.1824, 5: 2.5706, 10: 2.2281, 49: 2.0096, 1000: 1.9623}
    got = t_value(0.95, list(table))
    assert got == pytest.approx(list(table.values()), abs=4e-3)
    assert got[4:] == pytest.approx(list(table.values())[4:], abs=1e-4)
    assert math.isnan(float(t_value(0.95, 0)))


@pytest.mark.parametrize("alpha", [0.05, 0.1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_infinite_population_matches_the_reference_library(alpha: float, seed: int) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(seed)
    y = rng.binomial(1, 0.6, 60).astype(float) * 0.8 + rng.normal(0, 0.1, 60)
    yhat = np.clip(y + rng.normal(0.1, 0.2, 60), -1, 1)
    unlabeled = np.clip(rng.normal(0.55, 0.4, 500), -1, 1)
    # The reference interval is estimate -/+ z * standard error (ours uses t; same centre
    # and standard error).
    z = z_value(1 - alpha)
    for lam in (None, 0.0, 0.4, 1.0):
        est = ppi_mean(y, yhat, unlabeled, confidence=1 - alpha, population="infinite", lam=lam)
        low, high = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=alpha, lam=lam)
        low, high = float(np.ravel(low)[0]), float(np.ravel(high)[0])
        assert float(est.estimate) == pytest.approx((low + high) / 2, rel=1e-10)
        assert float(est.standard_error) == pytest.approx((high - low) / (2 * z), rel=1e-10)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled)
    tuned = ppi_mean(y, yhat, unlabeled, population="infinite")
    assert float(tuned.estimate) == pytest.approx(float(np.ravel(point)[0]), rel=1e-10)


def test_batches_equal_one_at_a_time() -> None:
    rng = np.random.default_rng(5)
    y, f, rest = rng.random((3, 20)), rng.random((3, 20)), rng.random((3, 50))
    batch = ppi_mean(y, f, rest)
    for i in range(3):
        one = ppi_mean(y[i], f[i], rest[i])
        assert float(one.ci_high) == pytest.approx(batch.ci_high[i])
        assert float(one.lam) == pytest.approx(batch.lam[i])
