"""Agreement between two sets of labels over the same items (pure functions).

The generic statistics (``accuracy``, ``cohen_kappa``, ``confusion_matrix``) take any
hashable labels. The verdict statistics work on a 4x4 contingency table of the four
verdicts in their ordinal order (``VERDICT_ORDER``), so one table serves accuracy, kappa
and Krippendorff's alpha alike, and the bootstrap can resample tables with numpy instead
of re-counting labels a thousand times.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

__all__ = [
    "VERDICT_ORDER",
    "AgreementEstimates",
    "Estimate",
    "accuracy",
    "bootstrap_agreement",
    "cohen_kappa",
    "confusion_matrix",
    "krippendorff_alpha_ordinal",
    "table_accuracy",
    "table_alpha_ordinal",
    "table_kappa",
    "verdict_table",
]

VERDICT_ORDER: tuple[str, ...] = ("contradicts", "missing", "partially_meets", "meets")
"""The verdicts from worst to best: the order the ordinal metric ranks them in. A
contradiction is worse than an omission (the score penalises it more), so it ranks lowest."""

FloatArray = npt.NDArray[np.float64]


def _paired(a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} != {len(b)}")
    if not a:
        raise ValueError("no labels to compare")


def accuracy(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items with the same label."""
    _paired(a, b)
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa: (p_o - p_e) / (1 - p_e), chance agreement from the two marginals.

    When both raters use one and the same label throughout, agreement is perfect and not
    improvable by chance: 1.0 is returned rather than 0/0.
    """
    _paired(a, b)
    n = len(a)
    observed = accuracy(a, b)
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


def confusion_matrix(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable]
) -> list[list[int]]:
    """Counts with rows for ``a``'s label and columns for ``b``'s, in ``labels`` order."""
    _paired(a, b)
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for x, y in zip(a, b, strict=True):
        matrix[index[x]][index[y]] += 1
    return matrix


# -- verdict tables -------------------------------------------------------------------------


def verdict_table(a: Sequence[str], b: Sequence[str]) -> npt.NDArray[np.int64]:
    """4x4 counts, rows ``a``'s verdict and columns ``b``'s, in ``VERDICT_ORDER``.

    Raises ``ValueError`` for a label outside the four verdicts (an unscored ``None``
    included: unscored checks must be dropped before agreement is measured).
    """
    _paired(a, b)
    index = {label: i for i, label in enumerate(VERDICT_ORDER)}
    table = np.zeros((len(VERDICT_ORDER), len(VERDICT_ORDER)), dtype=np.int64)
    for x, y in zip(a, b, strict=True):
        if x not in index or y not in index:
            bad = x if x not in index else y
            raise ValueError(f"unknown verdict {bad!r}; expected one of {', '.join(index)}")
        table[index[x], index[y]] += 1
    return table


def table_accuracy(tables: npt.ArrayLike) -> FloatArray:
    """Share on the diagonal; ``tables`` is one 4x4 table or a stack (..., 4, 4)."""
    t = np.asarray(tables, dtype=np.float64)
    return np.asarray(np.trace(t, axis1=-2, axis2=-1) / t.sum(axis=(-2, -1)))


def table_kappa(tables: npt.ArrayLike) -> FloatArray:
    """Cohen's kappa of each table; 1.0 where chance agreement is 1 (as ``cohen_kappa``)."""
    t = np.asarray(tables, dtype=np.float64)
    n = t.sum(axis=(-2, -1))
    observed = np.trace(t, axis1=-2, axis2=-1) / n
    expected = (t.sum(axis=-1) * t.sum(axis=-2)).sum(axis=-1) / (n * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = (observed - expected) / (1.0 - expected)
    return np.asarray(np.where(expected >= 1.0, 1.0, kappa))


def table_alpha_ordinal(tables: npt.ArrayLike) -> FloatArray:
    """Krippendorff's alpha with the ordinal metric, two raters, no missing values.

    Each unit (item) holds two values, one per rater, so it adds 1/(m_u - 1) = 1 to the
    coincidence matrix for each ordered pair of its values: ``o = T + T^T``. With
    ``n_c = sum_k o_ck`` (how often value c was used by either rater) and ``n = sum_c n_c``
    (twice the items), the ordinal distance is

        delta_ck = sum_{g=c..k} n_g - (n_c + n_k) / 2  =  |M_k - M_c|,
        M_c = (n_0 + ... + n_c) - n_c / 2              (the mid-rank of value c),

    and ``alpha = 1 - D_o / D_e = 1 - (n - 1) * sum o_ck delta_ck^2 / sum n_c n_k delta_ck^2``.
    When only one value is used at all, D_e is 0 and alpha is undefined; as with
    ``cohen_kappa``, the raters agree perfectly and 1.0 is returned.
    """
    t = np.asarray(tables, dtype=np.float64)
    coincidence = t + np.swapaxes(t, -1, -2)
    used = coincidence.sum(axis=-1)
    midrank = np.cumsum(used, axis=-1) - used / 2
    delta2 = (midrank[..., :, None] - midrank[..., None, :]) ** 2
    n = used.sum(axis=-1)
    observed = (coincidence * delta2).sum(axis=(-2, -1))
    expected = (used[..., :, None] * used[..., None, :] * delta2).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.asarray(np.where(expected > 0, alpha, 1.0))


def krippendorff_alpha_ordinal(a: Sequence[str], b: Sequence[str]) -> float:
    """Krippendorff's alpha (ordinal metric) between two raters' verdicts on the same items.

    Verdicts rank contradicts < missing < partially_meets < meets (``VERDICT_ORDER``), so
    confusing meets with partially_meets costs less than confusing meets with contradicts;
    the formula is in ``table_alpha_ordinal``. 1 is perfect agreement, 0 chance level.
    Raises ``ValueError`` for sequences of different or zero length and unknown verdicts.
    """
    return float(table_alpha_ordinal(verdict_table(a, b)))


# -- bootstrap --------------------------------------------------------------------------------

_STATISTICS = {
    "accuracy": table_accuracy,
    "cohen_kappa": table_kappa,
    "krippendorff_alpha": table_alpha_ordinal,
}


class Estimate(BaseModel):
    """A statistic on the data, with a bootstrap percentile interval."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    value: float
    """The statistic on all items (not the mean of the resamples)."""
    low: float
    """Lower bound of the percentile interval."""
    high: float
    """Upper bound of the percentile interval."""


class AgreementEstimates(BaseModel):
    """Accuracy, Cohen's kappa and ordinal Krippendorff's alpha with bootstrap intervals."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    n: int
    """Items compared."""
    units: int
    """Resampling units (clusters) the items fall in."""
    accuracy: Estimate
    """Share of items with the same verdict."""
    cohen_kappa: Estimate
    """Agreement beyond chance, every disagreement alike."""
    krippendorff_alpha: Estimate
    """Ordinal metric over ``VERDICT_ORDER``."""


def _cluster_tables(
    a: Sequence[str], b: Sequence[str], clusters: Sequence[Hashable]
) -> npt.NDArray[np.int64]:
    """One flattened 4x4 table per distinct cluster, in order of first appearance."""
    if len(clusters) != len(a):
        raise ValueError(f"clusters differ in length from the labels: {len(clusters)} != {len(a)}")
    members: dict[Hashable, list[int]] = {}
    for i, cluster in enumerate(clusters):
        members.setdefault(cluster, []).append(i)
    return np.stack(
        [
            verdict_table([a[i] for i in rows], [b[i] for i in rows]).ravel()
            for rows in members.values()
        ]
    )


def bootstrap_agreement(
    a: Sequence[str],
    b: Sequence[str],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementEstimates:
    """Agreement statistics with cluster-bootstrap percentile intervals.

    ``clusters`` gives each item's resampling unit (None: every item is its own unit).
    Resample whole clusters when items within one are correlated: verdicts on the checks
    of one question share its rubric and its answers, so a judge that misreads a rubric
    errs on many of its checks at once; resampling checks one by one would treat them as
    independent and make the intervals too narrow. Each resample draws as many clusters as
    there are, with replacement, from ``numpy.random.default_rng(seed)``: the same inputs
    and seed give the same intervals.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1; got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1; got {confidence}")
    units = clusters if clusters is not None else range(len(a))
    per_cluster = _cluster_tables(a, b, units)
    k = len(per_cluster)
    draws = np.random.default_rng(seed).integers(0, k, size=(n_resamples, k))
    offsets = np.arange(n_resamples)[:, None] * k
    weights = np.bincount((draws + offsets).ravel(), minlength=n_resamples * k)
    resampled = (weights.reshape(n_resamples, k) @ per_cluster).reshape(n_resamples, 4, 4)
    total = per_cluster.sum(axis=0).reshape(4, 4)
    tail = (1 - confidence) / 2
    estimates = {}
    for name, statistic in _STATISTICS.items():
        low, high = np.quantile(statistic(resampled), [tail, 1 - tail])
        estimates[name] = Estimate(value=float(statistic(total)), low=float(low), high=float(high))
    return AgreementEstimates(n=len(a), units=k, **estimates)
