"""k-means for the diversity analysis: greedy k-means++ seeding and Lloyd iterations on
(sparse) question vectors, several runs from one seeded generator, the best one kept."""

from __future__ import annotations

import math

import numpy as np

from gamut_eval.analysis._diversity_vectors import TOLERANCE, FloatArray, IntArray, Tfidf

__all__ = ["cluster_centroids", "default_clusters", "kmeans"]

_MAX_ITER = 300
"""Lloyd iterations at most per run (they stop earlier, as soon as no question moves)."""
_N_INIT = 10
"""k-means runs from different seedings; the one with the smallest inertia is kept."""


def default_clusters(n: int) -> int:
    """``max(2, round(sqrt(n / 2)))``, but no more than ``n``."""
    return min(n, max(2, round(math.sqrt(n / 2))))


def cluster_centroids(x: Tfidf, labels: IntArray, k: int) -> FloatArray:
    """Mean row of each cluster (zeros for an empty one), as a dense ``k x terms`` array."""
    _, v = x.shape
    sums = np.bincount(labels[x.rows] * v + x.columns, weights=x.weights, minlength=k * v)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    return sums.reshape(k, v) / np.maximum(sizes, 1.0)[:, None]


def _dots(x: Tfidf, centroids: FloatArray) -> FloatArray:
    """``X @ centroids.T`` (rows x clusters) without densifying ``X``."""
    full = x.as_dense()
    if full is not None:
        return full @ centroids.T
    n = x.shape[0]
    out = np.zeros((n, centroids.shape[0]))
    filled = np.diff(x.indptr) > 0
    if filled.any():
        products = centroids[:, x.columns] * x.weights  # clusters x stored weights
        out[filled] = np.add.reduceat(products, x.indptr[:-1][filled], axis=1).T
    return out


def _kmeans_pp(gram: FloatArray, k: int, rng: np.random.Generator) -> list[int]:
    """Greedy k-means++ seeding (as scikit-learn does it): the first centre uniformly;
    then ``2 + ln k`` candidates, each drawn with probability proportional to its squared
    distance to the nearest centre so far, and the one leaving the smallest total squared
    distance becomes the next centre (distances come from the Gram matrix). When every
    row coincides with a centre, the first row not yet chosen is taken."""
    n = gram.shape[0]
    norms = np.diag(gram)
    trials = 2 + int(math.log(k))

    def distances(rows: IntArray) -> FloatArray:  # squared, rows x every row
        return np.maximum(norms[rows, None] + norms[None, :] - 2.0 * gram[rows], 0.0)

    centres = [int(rng.integers(n))]
    nearest = distances(np.array(centres))[0]
    while len(centres) < k:
        total = float(nearest.sum())
        if total <= TOLERANCE:
            centres.append(next(i for i in range(n) if i not in centres))
            continue
        candidates = rng.choice(n, size=trials, p=nearest / total)
        pooled = np.minimum(nearest[None, :], distances(candidates))
        best = int(np.argmin(pooled.sum(axis=1)))
        centres.append(int(candidates[best]))
        nearest = pooled[best]
    return centres


def _lloyd(x: Tfidf, norms: FloatArray, centres: list[int]) -> tuple[IntArray, float]:
    """Lloyd iterations from the given centre rows until no row moves: labels, inertia.

    A cluster left empty takes the row farthest from its own centroid among clusters
    with more than one row (lowest index on ties), so every cluster keeps a row.
    """
    n, k = x.shape[0], len(centres)
    labels = np.full(n, -1, dtype=np.int64)
    centroids = np.zeros((k, x.shape[1]))
    for j, row in enumerate(centres):
        start, stop = x.indptr[row], x.indptr[row + 1]
        centroids[j, x.columns[start:stop]] = x.weights[start:stop]
    inertia = math.inf
    for _ in range(_MAX_ITER):
        distances = norms[:, None] - 2.0 * _dots(x, centroids) + (centroids**2).sum(axis=1)
        new = np.argmin(distances, axis=1).astype(np.int64)
        sizes = np.bincount(new, minlength=k)
        for empty in np.flatnonzero(sizes == 0):
            own = distances[np.arange(n), new]
            movable = sizes[new] > 1
            row = int(np.argmax(np.where(movable, own, -np.inf)))
            sizes[new[row]] -= 1
            new[row] = empty
            sizes[empty] = 1
        inertia = float(np.maximum(distances[np.arange(n), new], 0.0).sum())
        if np.array_equal(new, labels):
            break
        labels = new
        centroids = cluster_centroids(x, labels, k)
    return labels, inertia


def kmeans(x: Tfidf, gram: FloatArray, k: int, seed: int) -> IntArray:
    """Cluster labels: ``_N_INIT`` runs of greedy k-means++ seeding and Lloyd iterations,
    drawn in turn from one generator seeded with ``seed``; the run with the smallest
    inertia (sum of squared distances to the centroids) wins, the earliest on ties."""
    rng = np.random.default_rng(seed)
    norms = np.diag(gram).copy()
    best_labels, best_inertia = np.zeros(x.shape[0], dtype=np.int64), math.inf
    for _ in range(_N_INIT):
        labels, inertia = _lloyd(x, norms, _kmeans_pp(gram, k, rng))
        if inertia < best_inertia - TOLERANCE:
            best_labels, best_inertia = labels, inertia
    return best_labels
