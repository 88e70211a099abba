"""Question vectors for the diversity analysis: TF-IDF and k-means from scikit-learn, and
the Gram matrix of cosine similarities (a sparse matrix product)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse

from gamut_eval.analysis._diversity_text import terms

__all__ = [
    "TOLERANCE",
    "FloatArray",
    "IntArray",
    "Tfidf",
    "cluster_centroids",
    "cosine_gram",
    "default_clusters",
    "kmeans",
    "tfidf",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

TOLERANCE = 1e-9
"""Slack for rounding when comparing a similarity with the threshold (identical questions
compute as 0.9999999999999998)."""
_N_INIT = 10
"""k-means runs from different k-means++ seedings; the one with the smallest inertia wins."""


@dataclass(frozen=True, eq=False)
class Tfidf:
    """Row vectors of some texts (one L2-normalised row per text) and their column names."""

    vocabulary: tuple[str, ...]
    """Column ``j`` is term ``vocabulary[j]`` (sorted)."""
    matrix: Any
    """``texts x terms``, a SciPy CSR matrix (dense rows of embeddings are stored in it too)."""

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.matrix.shape[0]), int(self.matrix.shape[1])

    def dense(self) -> FloatArray:
        """The full matrix (for small inputs and tests)."""
        return np.asarray(self.matrix.toarray(), dtype=np.float64)

    def weight(self, row: int, term: str) -> float:
        """The weight of ``term`` in row ``row`` (0.0 when absent)."""
        if term not in self.vocabulary:
            return 0.0
        return float(self.matrix[row, self.vocabulary.index(term)])

    @classmethod
    def from_dense(cls, matrix: FloatArray) -> Tfidf:
        """Wrap dense row vectors (embeddings) in the same form."""
        return cls(
            vocabulary=tuple(str(j) for j in range(matrix.shape[1])),
            matrix=sparse.csr_matrix(np.asarray(matrix, dtype=np.float64)),
        )


def tfidf(texts: Sequence[str]) -> Tfidf:
    """TF-IDF vectors of ``texts`` (scikit-learn's ``TfidfVectorizer``).

    Terms are lower-cased words less :data:`STOPWORDS`, plus the bigrams of the words that
    remain (:func:`terms`). A term's weight in a text is ``(1 + ln tf) * idf``, with ``tf``
    its count in the text (``sublinear_tf``) and ``idf = ln((1 + n) / (1 + df)) + 1``
    (``smooth_idf``; ``n`` texts, ``df`` of them contain the term); each row is then divided
    by its L2 norm. A text with no terms gets a row of zeros.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not any(terms(text) for text in texts):  # scikit-learn refuses an empty vocabulary
        return Tfidf(vocabulary=(), matrix=sparse.csr_matrix((len(texts), 0)))
    vectorizer = TfidfVectorizer(
        analyzer=terms, sublinear_tf=True, smooth_idf=True, norm="l2", dtype=np.float64
    )
    matrix = vectorizer.fit_transform(list(texts)).tocsr()
    vocabulary = tuple(str(t) for t in vectorizer.get_feature_names_out())
    return Tfidf(vocabulary=vocabulary, matrix=matrix)


def cosine_gram(x: Tfidf) -> FloatArray:
    """``X @ X.T``: every pair's cosine similarity (rows are unit length or zero)."""
    return np.asarray((x.matrix @ x.matrix.T).toarray(), dtype=np.float64)


def default_clusters(n: int) -> int:
    """``max(2, round(sqrt(n / 2)))``, but no more than ``n``."""
    return min(n, max(2, round(math.sqrt(n / 2))))


def kmeans(x: Tfidf, k: int, seed: int) -> IntArray:
    """Cluster labels from scikit-learn's ``KMeans``: ``_N_INIT`` runs of greedy k-means++
    seeding and Lloyd iterations from ``random_state=seed``, the run with the smallest
    inertia kept. Fewer distinct questions than ``k`` leaves clusters empty (not listed).

    It runs on one OpenMP thread: at these sizes (thousands of questions) that takes well
    under a second, where several threads on a shared machine's cores took seconds."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    if x.shape[1] == 0:  # no terms at all: every question is the same (zero) point
        return np.zeros(x.shape[0], dtype=np.int64)
    model = KMeans(n_clusters=k, n_init=_N_INIT, random_state=seed, algorithm="lloyd")
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        # "Number of distinct clusters found smaller than n_clusters": duplicate questions.
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = model.fit_predict(x.matrix)
    return np.asarray(labels, dtype=np.int64)


def cluster_centroids(x: Tfidf, labels: IntArray, k: int) -> FloatArray:
    """Mean row of each cluster (zeros for an empty one), as a dense ``k x terms`` array."""
    n = x.shape[0]
    membership = sparse.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.asarray((membership @ x.matrix).toarray(), dtype=np.float64)
    return sums / np.maximum(sizes, 1.0)[:, None]
