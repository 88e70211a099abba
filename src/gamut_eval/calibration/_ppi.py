"""The power-tuned prediction-powered mean (PPI++) and its normal interval. NumPy only.

A cheap judge scores every unit; a strong judge scores a random sample of them. The
estimate is ``lam * mean(cheap over the population) + mean(strong - lam * cheap over the
sample)``: the cheap judge's mean, corrected by its error measured on the sample, with
``lam`` (power tuning) chosen from the data to make the interval as narrow as it can be.
Every function works along the last axis, so one call handles a batch of estimands (all
models of a run, or thousands of simulated trials). NaN marks a unit a judge did not score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Population = Literal["finite", "infinite"]
"""``finite``: the target is the strong judge's mean over the units at hand (the run's
questions), sampled without replacement. ``infinite``: the units are themselves a draw
from a larger pool and the target is its mean (the form of the reference library)."""


@dataclass(frozen=True)
class MeanEstimate:
    """A prediction-powered mean per estimand (arrays over the leading axes; 0-d for one)."""

    estimate: Floats
    """The calibrated mean."""
    standard_error: Floats
    ci_low: Floats
    ci_high: Floats
    lam: Floats
    """The power-tuning weight on the cheap judge, in [0, 1] (0: the strong sample alone)."""
    n_answers: npt.NDArray[np.int64]
    """Units the cheap judge scored (the population of the estimate)."""
    n_calibration: npt.NDArray[np.int64]
    """Sampled units both judges scored (the correction's sample)."""
    cheap_mean: Floats
    """The cheap judge's naive mean over its scored units."""
    strong_mean: Floats
    """The strong judge's naive mean over the calibration sample."""
    strong_standard_error: Floats
    """The standard error of ``strong_mean`` (the strong judge's sample alone)."""
    width_ratio: Floats
    """Interval width over that of the strong judge's sample alone (below 1: narrower)."""
    confidence: float


def z_value(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.959964 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def t_value(confidence: float, df: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The two-sided Student t quantile for ``confidence`` with ``df`` degrees of freedom.

    Exact for 1 and 2 degrees of freedom; from 3 on, the Cornish-Fisher expansion in the
    normal quantile (Abramowitz and Stegun 26.7.5), within 0.005 at 3, 5e-4 at 5 and 1e-4 from 10.
    NaN below 1 degree of freedom.
    """
    x = z_value(confidence)
    p = 0.5 + confidence / 2.0
    nu = np.asarray(df, dtype=np.float64)
    safe = np.where(nu >= 1, nu, 1.0)
    g1 = (x**3 + x) / 4
    g2 = (5 * x**5 + 16 * x**3 + 3 * x) / 96
    g3 = (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
    g4 = (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160
    series = x + g1 / safe + g2 / safe**2 + g3 / safe**3 + g4 / safe**4
    one = math.tan(math.pi * (p - 0.5))
    two = (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    out = np.where(nu >= 3, series, np.where(nu >= 2, two, one))
    return np.where(nu >= 1, out, np.nan)


_CDF = np.vectorize(NormalDist().cdf, otypes=[np.float64])


def normal_cdf(x: npt.ArrayLike) -> Floats:
    """The standard normal distribution function, element by element (NaN stays NaN)."""
    values = np.asarray(x, dtype=np.float64)
    out: Floats = np.full(values.shape, np.nan)
    finite = ~np.isnan(values)
    if finite.any():
        out[finite] = _CDF(values[finite])
    return out


def _divide(numerator: npt.ArrayLike, denominator: npt.ArrayLike) -> Floats:
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _mean(x: Floats, count: npt.NDArray[np.int64]) -> Floats:
    return _divide(np.nansum(x, axis=-1), count)


def _centred(x: Floats, count: npt.NDArray[np.int64]) -> Floats:
    return x - _mean(x, count)[..., None]


def _variance(x: Floats, count: npt.NDArray[np.int64], ddof: int) -> Floats:
    """Variance along the last axis over the non-NaN entries."""
    centred = _centred(x, count)
    return _divide(np.nansum(centred * centred, axis=-1), count - ddof)


def ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    yhat_unlabeled: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    population: Population = "finite",
    lam: float | npt.ArrayLike | None = None,
) -> MeanEstimate:
    """The power-tuned prediction-powered mean of ``y`` and its interval.

    ``y`` and ``yhat``: the strong and the cheap judge's scores of the sampled units;
    ``yhat_unlabeled``: the cheap judge's scores of the units not sampled. NaN is a unit the
    judge did not score: a unit the cheap judge did not score is outside the population; a
    sampled unit only the cheap judge scored counts as not sampled. ``lam=None`` tunes
    the weight (clipped to [0, 1]); ``lam=1`` is plain PPI, ``lam=0`` the strong sample
    alone. ``population="infinite"`` gives the reference library's ``ppi_mean_ci``
    estimate and standard error (its variance conventions included); ``"finite"`` targets
    the mean over the units at hand, with the finite-population correction. Intervals
    use Student's t with ``n_calibration - 1`` degrees of freedom (docs/method.md,
    calibrated scores).
    """
    z_value(confidence)  # checks it
    y_in = np.asarray(y, dtype=np.float64)
    f_in = np.asarray(yhat, dtype=np.float64)
    fu_in = np.asarray(yhat_unlabeled, dtype=np.float64)
    if y_in.shape != f_in.shape:
        raise ValueError(f"y and yhat differ in shape: {y_in.shape} and {f_in.shape}")
    labeled = ~np.isnan(y_in) & ~np.isnan(f_in)
    y_l = np.where(labeled, y_in, np.nan)
    f_l = np.where(labeled, f_in, np.nan)
    f_u = np.concatenate([np.where(labeled, np.nan, f_in), fu_in], axis=-1)
    n = labeled.sum(axis=-1)
    n_u = (~np.isnan(f_u)).sum(axis=-1)
    total = n + n_u
    f_all = np.concatenate([f_l, f_u], axis=-1)
    cheap_mean = _mean(f_all, total)
    strong_mean = _mean(y_l, n)
    if population == "finite":
        # One degree of freedom more when the weight is fitted on the sample, as for the
        # regression estimator of survey sampling.
        ddof, share = (2 if lam is None else 1), _divide(n, total)
        if lam is None:
            # The weight that minimises the variance of y - lam * f: the regression slope,
            # with the cheap judge's variance taken over the whole population (known).
            covariance = _divide(np.nansum(_centred(y_l, n) * _centred(f_l, n), axis=-1), n - 1)
            lam = _divide(covariance, _variance(f_all, total, 1))
        weight = _tuned(lam, n)
        residual = y_l - weight[..., None] * f_l
        estimate = weight * cheap_mean + _mean(residual, n)
        variance = (1.0 - share) * _divide(_variance(residual, n, ddof), n)
        strong_variance = (1.0 - share) * _divide(_variance(y_l, n, 1), n)
    elif population == "infinite":
        ddof = 0
        if lam is None:
            # As the reference library: the gradients at the plain PPI estimate, their
            # covariance over n (both cross terms), the cheap judge's variance over all
            # units with ddof 1, and the (1 + n / N) factor of the unlabeled share.
            covariance = _divide(np.nansum(_centred(y_l, n) * _centred(f_l, n), axis=-1), n)
            factor = 1.0 + _divide(n, n_u)
            lam = _divide(covariance, factor * _variance(f_all, total, 1))
        weight = _tuned(lam, n)
        residual = y_l - weight[..., None] * f_l
        estimate = weight * _mean(f_u, n_u) + _mean(residual, n)
        imputed = weight**2 * _divide(_variance(f_u, n_u, ddof), n_u)
        variance = imputed + _divide(_variance(residual, n, ddof), n)
        strong_variance = _divide(_variance(y_l, n, ddof), n)
    else:
        raise ValueError(f"population must be 'finite' or 'infinite', got {population!r}")
    se = np.sqrt(variance)
    z = t_value(confidence, n - 1)
    strong_se = np.sqrt(strong_variance)
    return MeanEstimate(
        estimate=estimate,
        standard_error=se,
        ci_low=estimate - z * se,
        ci_high=estimate + z * se,
        lam=weight,
        n_answers=total,
        n_calibration=n,
        cheap_mean=cheap_mean,
        strong_mean=strong_mean,
        strong_standard_error=strong_se,
        width_ratio=_divide(se, strong_se),
        confidence=confidence,
    )


def _tuned(lam: float | npt.ArrayLike, n: npt.NDArray[np.int64]) -> Floats:
    """The weight per estimand, clipped to [0, 1]; 0 where it cannot be estimated."""
    weight = np.broadcast_to(np.asarray(lam, dtype=np.float64), n.shape)
    return np.clip(np.nan_to_num(weight, nan=0.0), 0.0, 1.0)
