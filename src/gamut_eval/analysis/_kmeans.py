"""k-means on sparse row vectors, step for step as scikit-learn's ``KMeans`` computes it.

``kmeans_labels(rows, k, seed)`` gives the labels of ``KMeans(n_clusters=k, n_init=10,
random_state=seed, algorithm="lloyd").fit_predict(X)`` for the CSR matrix ``X`` that
``rows`` describes, in NumPy alone (importing scikit-learn and the part of SciPy it loads
cost a report about 1.5 s, several times the computation):

- **Seeding** (greedy k-means++, as ``_kmeans_plusplus``): the first center drawn
  uniformly, each next one the best, by total squared distance, of ``2 + int(ln k)``
  candidates drawn with probability proportional to the squared distance to the nearest
  center so far; one ``numpy.random.RandomState(seed)`` for all ten runs, drawn from in
  the same order.
- **Lloyd iterations** (as ``_kmeans_single_lloyd``): each point to the center nearest by
  ``|c|^2 - 2 x.c`` (the first on a tie), centers the mean of their points, an empty
  cluster given the point farthest from its center; stop when no label changes, or when
  the centers moved less (sum of squared shifts) than ``1e-4`` times the mean variance of
  the columns, at most 300 iterations; then the run's inertia (sum of squared distances).
- **The best of ten runs**: the smallest inertia, a later run replacing the best only
  when its clustering differs.

Floating-point sums are taken in the order scikit-learn's compiled loops take them (a
row's stored values in order, points in order), and the numbers it computes with NumPy
are computed with the same NumPy calls, so the labels, centers and inertia are the same
numbers, not merely close: ``tests/analysis/test_kmeans.py`` holds them equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

N_INIT = 10
"""Runs from different seedings; the one with the smallest inertia wins."""
MAX_ITER = 300
TOL = 1e-4
"""Relative tolerance on the centers' shift (scikit-learn's default)."""


@dataclass(frozen=True, eq=False)
class SparseRows:
    """Rows of a CSR matrix, each row's values in the order it stores them."""

    data: FloatArray
    indices: IntArray
    indptr: IntArray
    columns: int

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    def padded(self) -> tuple[IntArray, FloatArray, npt.NDArray[np.bool_]]:
        """``(columns, values, stored)``, each ``n x width`` (the longest row): row ``i``'s
        stored columns and values in order, then padding (column 0, value 0.0,
        ``stored`` False)."""
        lengths = np.diff(self.indptr)
        width = int(lengths.max()) if self.n and len(self.data) else 0
        stored = np.arange(width)[None, :] < lengths[:, None]
        columns = np.zeros((self.n, width), dtype=np.int64)
        values = np.zeros((self.n, width), dtype=np.float64)
        columns[stored] = self.indices
        values[stored] = self.data
        return columns, values, stored


def _in_order(terms: FloatArray, axis: int = -1) -> FloatArray:
    """Sums along ``axis`` taken one term after another, from the first, as a loop takes
    them (``np.sum`` sums pairwise, so its last bits can differ from a loop's; a
    cumulative sum does not)."""
    total: FloatArray
    if terms.shape[axis] > 64:
        total = np.take(np.cumsum(terms, axis=axis), -1, axis=axis)
        return total
    total = np.zeros(np.delete(terms.shape, axis), dtype=np.float64)
    for part in np.moveaxis(terms, axis, 0):
        total += part
    return total


def _row_norms_dense(x: FloatArray) -> FloatArray:
    """Squared row norms as scikit-learn's ``row_norms`` computes them for dense rows."""
    norms: FloatArray = np.einsum("ij,ij->i", x, x)
    return norms


@dataclass
class _Points:
    """The data as the loops read it: padded rows, squared norms, rows in stored order."""

    rows: SparseRows
    columns: IntArray
    values: FloatArray
    stored: npt.NDArray[np.bool_]
    squared_norms: FloatArray
    entry_rows: IntArray
    """The row of each stored value."""

    @classmethod
    def of(cls, rows: SparseRows) -> _Points:
        columns, values, stored = rows.padded()
        return cls(
            rows=rows,
            columns=columns,
            values=values,
            stored=stored,
            squared_norms=_in_order(values * values),
            entry_rows=np.repeat(np.arange(rows.n), np.diff(rows.indptr)),
        )

    def dense_row(self, i: int) -> FloatArray:
        out = np.zeros(self.rows.columns, dtype=np.float64)
        start, end = self.rows.indptr[i], self.rows.indptr[i + 1]
        out[self.rows.indices[start:end]] = self.rows.data[start:end]
        return out

    def dots(self, centers: FloatArray) -> FloatArray:
        """``centers x points``: each dot product summed over the point's stored values in
        order (a value a center lacks adds 0.0, which changes nothing)."""
        by_column = np.ascontiguousarray(centers.T)
        out = np.zeros((self.rows.n, len(centers)), dtype=np.float64)
        for columns, values in zip(self.columns.T, self.values.T, strict=True):
            out += by_column[columns] * values[:, None]
        return np.ascontiguousarray(out.T)  # C order, as the matrix products the sums go to

    def distances_to_own(self, centers: FloatArray, labels: IntArray) -> FloatArray:
        """Each point's squared distance to its own center, as ``_euclidean_sparse_dense``
        takes it: ``sum((x - c)^2 - c^2)`` over the stored values, plus ``|c|^2``, at
        least 0."""
        norms = _row_norms_dense(centers)
        own = centers[labels[:, None], self.columns]
        terms = np.where(self.stored, (self.values - own) ** 2 - own * own, 0.0)
        return np.maximum(_in_order(terms) + norms[labels], 0.0)


def _plus_plus(points: _Points, k: int, rng: np.random.RandomState) -> FloatArray:
    """Greedy k-means++ seeding (``_kmeans_plusplus`` with unit sample weights)."""
    n = points.rows.n
    weight = np.ones(n, dtype=np.float64)
    trials = 2 + int(np.log(k))
    centers = np.empty((k, points.rows.columns), dtype=np.float64)
    first = rng.choice(n, p=weight / weight.sum())
    centers[0] = points.dense_row(first)
    closest = -2 * points.dots(centers[:1])
    closest += _row_norms_dense(centers[:1])[:, None]
    closest += points.squared_norms[None, :]
    np.maximum(closest, 0, out=closest)
    potential = closest @ weight
    for c in range(1, k):
        draws = rng.uniform(size=trials) * potential
        candidates = np.searchsorted(np.cumsum(weight * closest), draws)
        np.clip(candidates, None, closest.size - 1, out=candidates)
        dense = np.stack([points.dense_row(int(i)) for i in candidates])
        distances = -2 * points.dots(dense)
        distances += points.squared_norms[candidates][:, None]
        distances += points.squared_norms[None, :]
        np.maximum(distances, 0, out=distances)
        np.minimum(closest, distances, out=distances)
        potentials = distances @ weight.reshape(-1, 1)
        best = np.argmin(potentials)
        potential = potentials[best]
        closest = distances[best]
        centers[c] = dense[best]
    return centers


def _assign(points: _Points, centers: FloatArray) -> IntArray:
    """Each point's nearest center by ``|c|^2 - 2 x.c`` (the first of equals)."""
    scores = _row_norms_dense(centers)[:, None] - 2 * points.dots(centers)
    labels: IntArray = np.argmin(scores, axis=0).astype(np.int64)
    return labels


def _shift(old: FloatArray, new: FloatArray) -> FloatArray:
    """Euclidean distance of each new center from its old one, summed as
    ``_euclidean_dense_dense`` sums (four squares at a time, then the rest)."""
    squares = (new - old) * (new - old)
    k, width = squares.shape
    quads = width // 4 * 4
    grouped = squares[:, :quads].reshape(k, -1, 4)
    fours = ((grouped[..., 0] + grouped[..., 1]) + grouped[..., 2]) + grouped[..., 3]
    return np.sqrt(_in_order(np.concatenate([fours, squares[:, quads:]], axis=1)))


def _update(points: _Points, old: FloatArray, labels: IntArray) -> tuple[FloatArray, FloatArray]:
    """New centers (means of their points, an empty cluster relocated to the point
    farthest from its center) and how far each moved (``lloyd_iter_chunked_sparse``)."""
    rows = points.rows
    k = len(old)
    new = np.zeros_like(old)
    np.add.at(new, (labels[points.entry_rows], rows.indices), rows.data)
    weight = np.bincount(labels, minlength=k).astype(np.float64)
    empty = np.flatnonzero(weight == 0)
    if len(empty):
        distances = points.distances_to_own(old, labels)
        if np.max(distances) != 0:
            far = np.argpartition(distances, -len(empty))[: -len(empty) - 1 : -1]
            for cluster, point in zip(empty, far, strict=True):
                start, end = rows.indptr[point], rows.indptr[point + 1]
                columns, values = rows.indices[start:end], rows.data[start:end]
                source = labels[point]
                new[source, columns] -= values
                new[cluster, columns] = values
                weight[cluster] = 1.0
                weight[source] -= 1.0
    heaviest = np.argmax(weight)
    for j in range(k):
        if weight[j] > 0:
            new[j] *= 1.0 / weight[j]
        else:
            new[j] = new[heaviest]
    return new, _shift(old, new)


def _tolerance(rows: SparseRows) -> float:
    """``1e-4`` times the mean variance of the columns (``mean_variance_axis``)."""
    n = rows.n
    count = np.bincount(rows.indices, minlength=rows.columns)
    means = np.zeros(rows.columns, dtype=np.float64)
    np.add.at(means, rows.indices, rows.data)
    means /= float(n)
    diff = rows.data - means[rows.indices]
    correction = np.zeros(rows.columns, dtype=np.float64)
    variances = np.zeros(rows.columns, dtype=np.float64)
    np.add.at(correction, rows.indices, diff)
    np.add.at(variances, rows.indices, diff * diff)
    missing = (n - count).astype(np.float64)
    partial = count != n
    correction[partial] -= missing[partial] * means[partial]
    correction = correction**2 / float(n)
    variances[partial] += missing[partial] * means[partial] ** 2
    variances = (variances - correction) / float(n)
    return float(np.mean(variances) * TOL)


def _inertia(points: _Points, centers: FloatArray, labels: IntArray) -> float:
    return float(_in_order(points.distances_to_own(centers, labels)))


def _lloyd(points: _Points, centers: FloatArray, tol: float) -> tuple[IntArray, float]:
    labels_old = np.full(points.rows.n, -1, dtype=np.int64)
    converged = False
    for _ in range(MAX_ITER):
        labels = _assign(points, centers)
        centers, shift = _update(points, centers, labels)
        if np.array_equal(labels, labels_old):
            converged = True
            break
        if (shift**2).sum() <= tol:
            break
        labels_old = labels
    if not converged:
        labels = _assign(points, centers)
    return labels, _inertia(points, centers, labels)


def _same_clustering(a: IntArray, b: IntArray, k: int) -> bool:
    """Whether two labellings are the same partition up to renumbering (a label of
    ``a`` always meets the same label of ``b``)."""
    mapping = np.full(k, -1, dtype=np.int64)
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if mapping[x] == -1:
            mapping[x] = y
        elif mapping[x] != y:
            return False
    return True


def kmeans_labels(rows: SparseRows, k: int, seed: int) -> IntArray:
    """Cluster labels of the rows (see the module): ten seeded runs, the best kept."""
    points = _Points.of(rows)
    rng = np.random.RandomState(seed)
    tol = _tolerance(rows)
    best: tuple[IntArray, float] | None = None
    for _ in range(N_INIT):
        labels, inertia = _lloyd(points, _plus_plus(points, k, rng), tol)
        if best is None or (inertia < best[1] and not _same_clustering(labels, best[0], k)):
            best = (labels, inertia)
    assert best is not None
    return best[0]
