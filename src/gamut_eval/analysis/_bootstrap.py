"""The bootstrap over questions: one set of resample weights shared by every statistic.

A model's score is a mean over questions, and the checks of one question are graded on
one response against one rubric, so they are not independent: the resampling unit is the
question (docs/method.md [A2]). A resample draws as many questions as there are, with
replacement, and is stored as a weight per question (how often it was drawn), so the mean
of every model under every resample is one matrix product.

One weight matrix is drawn per report and shared by every model, judge and setting. The
resamples are then paired: the interval of a difference (two judges, two settings) or of a
rank correlation reflects the questions' variation once, as it should, instead of two
independent draws. Intervals are percentile intervals.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Bootstrap", "Means", "nanmean", "resample_weights"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def resample_weights(n_items: int, resamples: int, rng: np.random.Generator) -> FloatArray:
    """``(resamples, n_items)``: how often each item is drawn in each resample.

    Row ``b`` is ``bincount(rng.integers(0, n_items, size=(resamples, n_items))[b])``, so
    a seed fixes every resample.
    """
    if n_items == 0:
        return np.zeros((resamples, 0))
    draws = rng.integers(0, n_items, size=(resamples, n_items))
    offsets = np.arange(resamples)[:, None] * n_items
    counts = np.bincount((draws + offsets).ravel(), minlength=resamples * n_items)
    return counts.reshape(resamples, n_items).astype(np.float64)


def nanmean(values: npt.ArrayLike, axis: int = -1) -> FloatArray:
    """Mean over the non-NaN values; NaN (without numpy's warning) where there are none."""
    array = np.asarray(values, dtype=np.float64)
    valid = ~np.isnan(array)
    total = np.where(valid, array, 0.0).sum(axis=axis)
    count = valid.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, total / np.maximum(count, 1), np.nan))


def _weighted_means(values: FloatArray, weights: FloatArray) -> FloatArray:
    """``(B, ...)``: the mean over the last axis of ``values`` under each resample, NaNs
    left out (a question a model has no score for does not count in its mean)."""
    shape = values.shape[:-1]
    flat = values.reshape(-1, values.shape[-1])
    valid = ~np.isnan(flat)
    total = weights @ np.where(valid, flat, 0.0).T
    count = weights @ valid.T.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)
    return np.asarray(means.reshape(len(weights), *shape))


@dataclass(frozen=True)
class Means:
    """Means over questions: on the data (``point``) and under each resample (``boot``)."""

    point: FloatArray
    """Shape ``(...)``: the statistic as reported."""
    boot: FloatArray
    """Shape ``(B, ...)``: the same under each resample, for intervals."""


@dataclass(frozen=True)
class Bootstrap:
    """Resample weights over a report's questions, and how intervals are read from them."""

    weights: FloatArray
    """``(B, Q)`` from ``resample_weights``."""
    confidence: float
    """Coverage of the percentile intervals, e.g. 0.95."""
    seed: int
    """Seed the weights were drawn from (subsets derive their own seeds from it)."""

    @classmethod
    def draw(cls, n_items: int, resamples: int, seed: int, confidence: float) -> Bootstrap:
        rng = np.random.default_rng(seed)
        return cls(resample_weights(n_items, resamples, rng), confidence, seed)

    @property
    def resamples(self) -> int:
        return int(self.weights.shape[0])

    def means(self, values: npt.ArrayLike) -> Means:
        """Means over the last axis (questions) of ``values``, NaN meaning no value."""
        array = np.asarray(values, dtype=np.float64)
        return Means(nanmean(array), _weighted_means(array, self.weights))

    def interval(self, samples: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Percentile interval over axis 0 of resampled statistics; NaN resamples (a
        statistic undefined on that resample) are left out, all-NaN gives NaN."""
        array = np.asarray(samples, dtype=np.float64)
        tail = 100 * (1 - self.confidence) / 2
        if array.shape[0] == 0:
            nan = np.full(array.shape[1:], np.nan)
            return nan, nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices give NaN
            low, high = np.nanpercentile(array, [tail, 100 - tail], axis=0)
        return np.asarray(low), np.asarray(high)

    def subset(self, mask: npt.ArrayLike, key: int) -> Bootstrap:
        """A bootstrap of its own for a subset of the questions (a domain, a popularity
        band): the subset is resampled at its own size, with a seed derived from this
        one and ``key`` so that every subset is reproducible and independent."""
        n_items = int(np.count_nonzero(mask))
        rng = np.random.default_rng([self.seed, key])
        return Bootstrap(resample_weights(n_items, self.resamples, rng), self.confidence, self.seed)
