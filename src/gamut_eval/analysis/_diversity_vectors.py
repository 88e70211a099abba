"""Question vectors for the diversity analysis: sparse TF-IDF (NumPy only) and the Gram
matrix of cosine similarities, sparse throughout so paper scale takes well under a second."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gamut_eval.analysis._diversity_text import terms

__all__ = ["TOLERANCE", "FloatArray", "IntArray", "Tfidf", "cosine_gram", "tfidf"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_DENSE_DF = 64
"""Terms in at least this many questions enter the similarity matrix through a dense
matrix product; rarer ones through their pairs of questions (see :func:`cosine_gram`)."""
TOLERANCE = 1e-9
"""Slack for rounding when comparing a similarity with the threshold (identical questions
compute as 0.9999999999999998)."""


# --------------------------------------------------------------------------- TF-IDF


@dataclass(frozen=True, eq=False)
class Tfidf:
    """TF-IDF vectors of some texts, one L2-normalised row per text, stored sparse (CSR):
    row ``i``'s terms are ``columns[indptr[i]:indptr[i + 1]]`` with weights ``weights[...]``.
    """

    vocabulary: tuple[str, ...]
    """Column ``j`` is term ``vocabulary[j]`` (sorted)."""
    indptr: IntArray
    columns: IntArray
    weights: FloatArray

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.indptr) - 1, len(self.vocabulary)

    @property
    def rows(self) -> IntArray:
        """The row of each stored weight."""
        return np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))

    def dense(self) -> FloatArray:
        """The full matrix (for small inputs and tests)."""
        out = np.zeros(self.shape)
        out[self.rows, self.columns] = self.weights
        return out

    def weight(self, row: int, term: str) -> float:
        """The weight of ``term`` in row ``row`` (0.0 when absent)."""
        if term not in self.vocabulary:
            return 0.0
        column = self.vocabulary.index(term)
        start, stop = self.indptr[row], self.indptr[row + 1]
        hit = np.flatnonzero(self.columns[start:stop] == column)
        return float(self.weights[start + hit[0]]) if hit.size else 0.0

    def as_dense(self) -> FloatArray | None:
        """The matrix as a view of ``weights`` when every row holds every term (embeddings),
        else None."""
        n, v = self.shape
        return self.weights.reshape(n, v) if self.weights.size == n * v else None

    @classmethod
    def from_dense(cls, matrix: FloatArray) -> Tfidf:
        """Wrap dense row vectors (embeddings) in the same sparse form."""
        n, d = matrix.shape
        return cls(
            vocabulary=tuple(str(j) for j in range(d)),
            indptr=np.arange(0, n * d + 1, d, dtype=np.int64),
            columns=np.tile(np.arange(d, dtype=np.int64), n),
            weights=np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1),
        )


def tfidf(texts: Sequence[str]) -> Tfidf:
    """TF-IDF vectors of ``texts``.

    Terms are lower-cased words less :data:`STOPWORDS`, plus the bigrams of the words that
    remain. A term's weight in a text is ``(1 + ln tf) * idf``, with ``tf`` its count in
    the text (sublinear tf) and ``idf = ln((1 + n) / (1 + df)) + 1`` (smooth idf; ``n``
    texts, ``df`` of them contain the term); each row is then divided by its L2 norm. A
    text with no terms gets a row of zeros.
    """
    counts = [Counter(terms(text)) for text in texts]
    vocabulary = tuple(sorted(set().union(*counts)))
    index = {term: j for j, term in enumerate(vocabulary)}
    lengths = np.array([len(c) for c in counts], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    columns = np.fromiter(
        (index[t] for c in counts for t in c), dtype=np.int64, count=int(indptr[-1])
    )
    tf = np.fromiter((v for c in counts for v in c.values()), dtype=np.float64, count=columns.size)
    n = len(texts)
    rows = np.repeat(np.arange(n), lengths)
    order = np.lexsort((columns, rows))  # columns ascending within each row
    columns, tf = columns[order], tf[order]
    df = np.bincount(columns, minlength=len(vocabulary))
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    weights = (1.0 + np.log(tf)) * idf[columns]
    norms = np.sqrt(np.bincount(rows, weights=weights**2, minlength=n))
    weights = weights / norms[rows]  # a row with no terms has no weights to divide
    return Tfidf(vocabulary=vocabulary, indptr=indptr, columns=columns, weights=weights)


# --------------------------------------------------------------------------- similarity


def cosine_gram(x: Tfidf) -> FloatArray:
    """``X @ X.T`` of a sparse matrix, i.e. every pair's cosine similarity.

    A term in ``df`` rows adds to ``df**2`` cells. Terms in at least ``_DENSE_DF`` rows go
    through one dense matrix product (there are at most ``nnz / _DENSE_DF`` of them); rarer
    ones add their products cell by cell (at most ``nnz * _DENSE_DF`` of them); terms in one
    row touch only the diagonal, which is set from the row norms. Both costs stay bounded
    whatever the distribution of terms.
    """
    full = x.as_dense()
    if full is not None:
        return full @ full.T
    n, v = x.shape
    rows = x.rows
    df = np.bincount(x.columns, minlength=v)
    gram = np.zeros((n, n))
    common = df[x.columns] >= _DENSE_DF
    if common.any():
        kept, dense_col = np.unique(x.columns[common], return_inverse=True)
        dense = np.zeros((n, kept.size))
        dense[rows[common], dense_col] = x.weights[common]
        gram += dense @ dense.T
    rare = ~common & (df[x.columns] >= 2)
    if rare.any():
        order = np.argsort(x.columns[rare], kind="stable")
        r, w, c = rows[rare][order], x.weights[rare][order], x.columns[rare][order]
        starts = np.flatnonzero(np.concatenate([[True], c[1:] != c[:-1]]))
        sizes = np.diff(np.append(starts, c.size))
        size_of = np.repeat(sizes, sizes)  # group size of each entry
        start_of = np.repeat(starts, sizes)
        left = np.repeat(np.arange(c.size), size_of)  # each entry once per group member
        block = np.repeat(np.cumsum(size_of) - size_of, size_of)
        right = np.repeat(start_of, size_of) + (np.arange(left.size) - block)
        cells = r[left] * n + r[right]
        gram += np.bincount(cells, weights=w[left] * w[right], minlength=n * n).reshape(n, n)
    squared = np.bincount(rows, weights=x.weights**2, minlength=n)
    np.fill_diagonal(gram, squared)
    return gram
