"""The statistics the tables are built from: the bootstrap over questions, rank
statistics over models, and agreement between two sets of labels. Pure NumPy functions.

**The bootstrap.** A model's score is a mean over questions, and the checks of one
question are graded on one response against one rubric, so they are not independent: the
resampling unit is the question (docs/method.md [A2]). A resample draws as many questions
as there are, with replacement, and is stored as a weight per question (how often it was
drawn), so the mean of every model under every resample is one matrix product. One weight
matrix is drawn per report and shared by every model, judge and setting. The resamples are
then paired: the interval of a difference (two judges, two settings) or of a rank
correlation reflects the questions' variation once, as it should, instead of two
independent draws. Intervals are percentile intervals.

**Rank statistics**: Kendall's tau-b, Pearson's r, ranks and swapped pairs. All take the
models along the last axis and broadcast over leading axes, so one call computes the
statistic on the data and under every bootstrap resample, in one vectorised NumPy pass
(SciPy's versions go slice by slice, and importing scipy.stats alone costs a report more
than all of them); a test holds each equal to SciPy's. A model with no score (NaN) in
either ranking is left out of the pairs it is in.

**Agreement.** The generic statistics (``accuracy``, ``cohen_kappa``,
``confusion_matrix``) take any hashable labels. The verdict statistics work on a 4x4
contingency table of the four verdicts in their ordinal order (``VERDICT_ORDER``), so one
table serves accuracy, kappa and Krippendorff's alpha alike, and the bootstrap can
resample tables with numpy instead of re-counting labels a thousand times.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from gamut_eval.scoring import Verdict

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


IntArray = npt.NDArray[np.int64]


def _pair_signs(x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """sign(x_i - x_j) and sign(y_i - y_j) for every pair i < j, 0 where a value is NaN."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    valid = ~(np.isnan(x) | np.isnan(y))
    both = valid[..., i] & valid[..., j]
    with np.errstate(invalid="ignore"):
        sx = np.where(both, np.sign(x[..., i] - x[..., j]), 0.0)
        sy = np.where(both, np.sign(y[..., i] - y[..., j]), 0.0)
    return sx, sy


def kendall_tau_b(x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray:
    """Kendall's tau-b between two scorings of the same items (last axis), equal to
    SciPy's ``kendalltau(variant="b", nan_policy="omit")`` on each slice (a test holds
    the two together), but in one vectorised pass over every bootstrap resample: SciPy's
    NaN handling goes slice by slice, about 100 times slower on 1,000 resamples.

    ``(n_c - n_d) / sqrt((n_0 - n_1) (n_0 - n_2))``, where n_0 counts pairs, n_1 and n_2
    pairs tied in x and in y. With s_x = sign(x_i - x_j), the numerator is
    ``sum s_x s_y`` and ``n_0 - n_1 = sum |s_x|``, which handles ties without special
    cases. NaN when a ranking has no untied pair (tau is undefined).
    """
    xa, ya = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    sx, sy = _pair_signs(xa, ya)
    numerator = (sx * sy).sum(axis=-1)
    denominator = np.sqrt(np.abs(sx).sum(axis=-1) * np.abs(sy).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(denominator > 0, numerator / denominator, np.nan))


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray:
    """Pearson's correlation over the last axis (items with both values), equal to SciPy's
    ``pearsonr`` on each slice (a test holds them together); NaN when either side is
    constant or fewer than two items remain."""
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    valid = ~(np.isnan(xa) | np.isnan(ya))
    count = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(valid, xa, 0.0).sum(axis=-1) / count
        my = np.where(valid, ya, 0.0).sum(axis=-1) / count
        dx = np.where(valid, xa - mx[..., None], 0.0)
        dy = np.where(valid, ya - my[..., None], 0.0)
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    return np.asarray(np.where(count >= 2, r, np.nan))


def ranks(scores: npt.ArrayLike) -> IntArray:
    """1 for the best; ties share the better rank (1, 2, 2, 4); NaN ranks after all
    (SciPy's ``rankdata(method="min")`` of the negated scores, which a test checks)."""
    values = np.asarray(scores, dtype=np.float64)
    filled = np.where(np.isnan(values), -np.inf, values)
    better = (filled[None, :] > filled[:, None]).sum(axis=1)
    out = 1 + better
    missing = np.isnan(values)
    out[missing] = 1 + int((~missing).sum())
    return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True)
class SwappedPair:
    """Two items ordered one way by ranking a and the other way by ranking b."""

    higher_in_a: int
    higher_in_b: int
    adjacent: bool
    """Next to each other in both rankings: the swap of two neighbours."""


def swapped_pairs(a: Sequence[float], b: Sequence[float]) -> list[SwappedPair]:
    """Every discordant pair (strict order both ways; ties are not swaps), best first."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    rank_a, rank_b = ranks(xa), ranks(xb)
    out = []
    for i in np.argsort(-np.nan_to_num(xa, nan=-np.inf), kind="stable"):
        for j in range(len(xa)):
            if xa[i] > xa[j] and xb[i] < xb[j]:
                adjacent = abs(rank_a[i] - rank_a[j]) == 1 and abs(rank_b[i] - rank_b[j]) == 1
                out.append(SwappedPair(int(i), int(j), bool(adjacent)))
    return out


VERDICT_ORDER: tuple[str, ...] = tuple(
    v.value for v in (Verdict.CONTRADICTS, Verdict.MISSING, Verdict.PARTIALLY_MEETS, Verdict.MEETS)
)
"""The verdicts from worst to best: the order the ordinal metric ranks them in. A
contradiction is worse than an omission (the score penalises it more), so it ranks lowest."""


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
    for x, y in zip(a, b, strict=True):
        if x not in VERDICT_ORDER or y not in VERDICT_ORDER:
            bad = x if x not in VERDICT_ORDER else y
            expected = ", ".join(VERDICT_ORDER)
            raise ValueError(f"unknown verdict {bad!r}; expected one of {expected}")
    return np.array(confusion_matrix(a, b, VERDICT_ORDER), dtype=np.int64)


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
    weights = resample_weights(k, n_resamples, np.random.default_rng(seed))
    resampled = (weights @ per_cluster).reshape(n_resamples, 4, 4)
    total = per_cluster.sum(axis=0).reshape(4, 4)
    tail = (1 - confidence) / 2
    estimates = {}
    for name, statistic in _STATISTICS.items():
        low, high = np.quantile(statistic(resampled), [tail, 1 - tail])
        estimates[name] = Estimate(value=float(statistic(total)), low=float(low), high=float(high))
    return AgreementEstimates(n=len(a), units=k, **estimates)
