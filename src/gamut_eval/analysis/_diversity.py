"""Question diversity (the paper's Section 6): templates, near duplicates and clusters.

Questions written by an LLM tend to fall into a few templates ("what is this X and ...").
:func:`question_diversity` measures how far a dataset's questions do, three ways:

**Templates.** :func:`question_template` reduces a question to its interrogative frame by
one deterministic rule (spelled out in that function's docstring): start at the first
wh-word, keep only the first clause, keep closed-class words (wh-words, auxiliaries,
determiners, pronouns, prepositions, ``kind``/``type``/``sort``) and turn each run of other
words into ``<X>``, then stop after the first ``<X>``. "What is this dish, what goes into
it?" and "What is this tower, why does it lean?" share the template ``what is this <X>``.

**Near duplicates.** Pairs of questions whose vectors have a cosine similarity at or
above a threshold (the Gram matrix of cosine similarities, summed term by term over the
questions that share it).

**Clusters.** k-means on the question vectors as scikit-learn's ``KMeans`` computes it
(:func:`kmeans_labels`): ten runs of greedy k-means++ seeding and Lloyd iterations from
``random_state=seed`` (so the same seed gives the same clusters), keeping the run with the
smallest inertia. Each cluster is described by the terms with the largest weight in its
TF-IDF centroid.

The vectors are TF-IDF by default (:func:`tfidf`: scikit-learn's ``TfidfVectorizer`` with
sublinear tf and smooth idf, the same numbers, sparse throughout, so paper scale, 1,813
questions, takes well under a second). Everything here is NumPy: importing scikit-learn and
SciPy cost a report about 1.5 s, several times the analysis, so their computations are
reproduced step for step, in the order they sum (``tests/analysis/test_kmeans.py`` and
``test_library_numerics.py`` hold the results equal to theirs).

With ``embeddings`` the vectors are sentence embeddings from a sentence-transformers model
(the optional ``embeddings`` extra, imported only when asked for): the official
``sentence-transformers/all-MiniLM-L6-v2`` unless another name or a local folder is given;
sentence-transformers loads it and keeps it in its own cache (Hugging Face's,
``HF_HOME``), downloading it the first time only. Cluster terms still come from TF-IDF,
since an embedding has no terms. When the extra or the model cannot be had, :func:`embed`
raises :class:`EmbeddingsUnavailable` and the analysis falls back to TF-IDF, saying why in
``embeddings_fallback``.
"""

from __future__ import annotations

import importlib
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from gamut_eval.dataset import Dataset
from gamut_eval.errors import InputError

# --------------------------------------------------------------------------- tokens

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


STOPWORDS = _wordset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing don't down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom whose why will with would you your yours
    """
)
"""Words dropped before TF-IDF: English function words, wh-words included (the templates
are measured separately, so the vectors compare what questions are about)."""


def _words(text: str) -> list[str]:
    """Lower-cased words (letters and digits, with an inner apostrophe); a possessive or
    contracted ``'s`` is cut off (``engine's`` -> ``engine``, ``what's`` -> ``what``)."""
    words = _WORD.findall(text.lower().translate(_APOSTROPHES))
    return [w[:-2] if w.endswith("'s") else w for w in words]


def terms(text: str) -> list[str]:
    """TF-IDF terms of a text: its words less stopwords, then the bigrams of that sequence
    (so ``kind of coffee`` gives ``kind``, ``coffee`` and ``kind coffee``)."""
    words = [w for w in _words(text) if w not in STOPWORDS]
    return words + [f"{x} {y}" for x, y in itertools.pairwise(words)]


# --------------------------------------------------------------------------- templates

_WH = _wordset("what which who whom whose where when why how")
_AUXILIARIES = _wordset(
    "is are was were am do does did can could would should will shall may might must has have had"
)
"""Verbs that open a yes/no question."""
_FRAME_WORDS = (
    _WH
    | _AUXILIARIES
    | _wordset(
        """
    be been this these that those the a an its their my your our his her some any
    each every it they them i you we me us he she of in on at for from to with by about
    into as kind type sort many much
    """
    )
)
"""Closed-class words a template keeps verbatim; every other word is content."""
_WH_WORD = re.compile(r"\b(?:" + "|".join(sorted(_WH)) + r")\b")
_CONTRACTED = _wordset("it that this there here") | _WH
"""Words whose ``'s`` is ``is`` (``what's`` -> ``what is``); on other words it is a
possessive and dropped."""
_CLAUSE_END = re.compile(r"[,;:?!.()\"]|\s(?:and|or|but)\s")
_COPULA = frozenset({"is", "are", "was", "were"})
_DEMONSTRATIVE = frozenset({"this", "these", "that", "those", "it", "they"})
_MAX_FRAME = 6
"""Tokens a template has at most."""


def question_template(question: str) -> str:
    """The interrogative frame of a question, by this rule:

    1. Lower-case; unify apostrophes.
    2. Start at the first wh-word (what, which, who, whom, whose, where, when, why, how),
       so a preamble ("This photo came out blurry, but what kind ...") is skipped; but
       start at the beginning when the question opens with an auxiliary verb (is, are,
       can, does, ...: a yes/no question, "is this plant safe ...") or has no wh-word.
    3. Keep the first clause: stop at the first ``, ; : ? ! . ( ) "`` or `` and / or / but ``.
    4. Split into words; ``'s`` after a wh-word or it/that/this/there/here becomes ``is``,
       on any other word it is a possessive and dropped.
    5. Keep closed-class words (wh-words, be/do/have and modal verbs, articles,
       demonstratives, possessive determiners, pronouns, common prepositions, ``kind``,
       ``type``, ``sort``, ``many``, ``much``) as they are; replace each run of other
       words by one ``<X>``.
    6. End after the first ``<X>``; if it is followed by a copula and a demonstrative
       (``is this``, ``are these``, ...), keep those two words too. At most six tokens.

    Examples: "What is this dish, what goes into it?" -> ``what is this <X>``; "What kind
    of coffee is this, ..." -> ``what kind of <X> is this``; "What rocket is this?" ->
    ``what <X> is this``; "How does this engine's turbocharger improve ...?" -> ``how does
    this <X>``; "What is this and where is it from?" -> ``what is this``.
    """
    text = question.lower().translate(_APOSTROPHES)
    opening = _WORD.search(text)
    wh = _WH_WORD.search(text)
    if wh is not None and (opening is None or opening.group() not in _AUXILIARIES):
        text = text[wh.start() :]
    clause = _CLAUSE_END.split(text, maxsplit=1)[0]
    words: list[str] = []
    for word in _WORD.findall(clause):
        if word.endswith("'s"):
            stem = word[:-2]
            words += [stem, "is"] if stem in _CONTRACTED else [stem]
        else:
            words.append(word)
    frame: list[str] = []
    for i, word in enumerate(words):
        if word in _FRAME_WORDS:
            frame.append(word)
            continue
        frame.append("<X>")
        rest = words[i + 1 :]
        while rest and rest[0] not in _FRAME_WORDS:
            rest = rest[1:]  # the rest of this run of content words
        if len(rest) >= 2 and rest[0] in _COPULA and rest[1] in _DEMONSTRATIVE:
            frame += rest[:2]
        break
    return " ".join(frame[:_MAX_FRAME]) or "<X>"


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

TOLERANCE = 1e-9
"""Slack for rounding when comparing a similarity with the threshold (identical questions
compute as 0.9999999999999998)."""


@dataclass(frozen=True, eq=False)
class Tfidf:
    """Row vectors of some texts (one L2-normalised row per text) and their column names,
    stored sparse (compressed rows)."""

    vocabulary: tuple[str, ...]
    """Column ``j`` is term ``vocabulary[j]`` (sorted)."""
    data: FloatArray
    """The stored (non-zero) values, row after row."""
    indices: IntArray
    """The column of each stored value."""
    indptr: IntArray
    """Row ``i``'s values are ``data[indptr[i]:indptr[i + 1]]``."""
    rank: IntArray
    """The order of the columns within a row: a row stores its values by ascending rank
    (TF-IDF: the order in which the terms first appear in the texts, as scikit-learn
    stores them); sums over a row's values go in that order."""

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.indptr) - 1, len(self.vocabulary)

    @property
    def nnz(self) -> int:
        """Values stored."""
        return len(self.data)

    def rows(self) -> SparseRows:
        return SparseRows(self.data, self.indices, self.indptr, self.shape[1])

    def dense(self) -> FloatArray:
        """The full matrix (for small inputs and tests)."""
        out = np.zeros(self.shape, dtype=np.float64)
        out[np.repeat(np.arange(self.shape[0]), np.diff(self.indptr)), self.indices] = self.data
        return out

    def weight(self, row: int, term: str) -> float:
        """The weight of ``term`` in row ``row`` (0.0 when absent)."""
        if term not in self.vocabulary:
            return 0.0
        column = self.vocabulary.index(term)
        start, end = self.indptr[row], self.indptr[row + 1]
        found = np.flatnonzero(self.indices[start:end] == column)
        return float(self.data[start + found[0]]) if found.size else 0.0

    @classmethod
    def from_dense(cls, matrix: FloatArray) -> Tfidf:
        """Wrap dense row vectors (embeddings) in the same form (zeros not stored)."""
        matrix = np.asarray(matrix, dtype=np.float64)
        rows, columns = np.nonzero(matrix)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(matrix)))])
        return cls(
            vocabulary=tuple(str(j) for j in range(matrix.shape[1])),
            data=matrix[rows, columns],
            indices=columns.astype(np.int64),
            indptr=indptr.astype(np.int64),
            rank=np.arange(matrix.shape[1], dtype=np.int64),
        )


def _normalise_rows(data: FloatArray, indptr: IntArray) -> None:
    """Divide each row by its L2 norm, in place (a row of zeros is left as it is); the
    squares are summed in the row's order."""
    rows = SparseRows(data, np.zeros(len(data), dtype=np.int64), indptr, 1)
    _, values, _ = rows.padded()
    sums = _in_order(values * values)
    data /= np.repeat(np.where(sums == 0.0, 1.0, np.sqrt(sums)), np.diff(indptr))


def tfidf(texts: Sequence[str]) -> Tfidf:
    """TF-IDF vectors of ``texts``, as scikit-learn's ``TfidfVectorizer(analyzer=terms,
    sublinear_tf=True, smooth_idf=True, norm="l2")`` computes them.

    Terms are lower-cased words less :data:`STOPWORDS`, plus the bigrams of the words that
    remain (:func:`terms`). A term's weight in a text is ``(1 + ln tf) * idf``, with ``tf``
    its count in the text (``sublinear_tf``) and ``idf = ln((1 + n) / (1 + df)) + 1``
    (``smooth_idf``; ``n`` texts, ``df`` of them contain the term); each row is then divided
    by its L2 norm. A text with no terms gets a row of zeros.
    """
    first_seen: dict[str, int] = {}
    rows: list[dict[int, int]] = []
    for text in texts:
        counts: dict[int, int] = {}
        for term in terms(text):
            seen = first_seen.setdefault(term, len(first_seen))
            counts[seen] = counts.get(seen, 0) + 1
        rows.append(counts)
    lengths = [len(counts) for counts in rows]
    indptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
    if not first_seen:
        empty = np.zeros(0, dtype=np.int64)
        return Tfidf((), np.zeros(0), empty, indptr, empty)
    stored = [sorted(counts.items()) for counts in rows]  # by first appearance
    seen_ids = np.fromiter((t for row in stored for t, _ in row), dtype=np.int64)
    data = np.fromiter((c for row in stored for _, c in row), dtype=np.float64)
    vocabulary = tuple(sorted(first_seen))
    column_of = np.empty(len(first_seen), dtype=np.int64)
    column_of[[first_seen[t] for t in vocabulary]] = np.arange(len(vocabulary))
    indices = column_of[seen_ids]
    df = np.bincount(indices, minlength=len(vocabulary)).astype(np.float64)
    df += 1.0
    idf = np.full_like(df, fill_value=len(texts) + 1, dtype=np.float64)
    idf /= df
    np.log(idf, out=idf)
    idf += 1.0
    np.log(data, data)
    data += 1.0
    data *= idf[indices]
    _normalise_rows(data, indptr)
    rank = np.empty(len(vocabulary), dtype=np.int64)
    rank[column_of] = np.arange(len(vocabulary))
    return Tfidf(vocabulary, data, indices, indptr, rank)


def cosine_gram(x: Tfidf) -> FloatArray:
    """``X @ X.T``: every pair's cosine similarity (rows are unit length or zero). Each
    pair's products are summed in the order the rows store their terms, term by term
    over the rows that have it (as a sparse matrix product sums them)."""
    n = x.shape[0]
    gram = np.zeros((n, n), dtype=np.float64)
    rows = np.repeat(np.arange(n), np.diff(x.indptr))
    order = np.lexsort((rows, x.rank[x.indices]))
    columns, rows, values = x.indices[order], rows[order], x.data[order]
    bounds = np.flatnonzero(np.diff(columns)) + 1
    for start, end in zip(
        np.concatenate([[0], bounds]), np.concatenate([bounds, [len(columns)]]), strict=True
    ):
        members, weights = rows[start:end], values[start:end]
        if end - start == n:
            gram += np.multiply.outer(weights, weights)
        else:
            gram[np.ix_(members, members)] += np.multiply.outer(weights, weights)
    return gram


# --------------------------------------------------------------------------- k-means

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
    """The labels of ``KMeans(n_clusters=k, n_init=10, random_state=seed,
    algorithm="lloyd").fit_predict(X)`` for the CSR matrix ``X`` that ``rows`` describes,
    step for step as scikit-learn computes them, in NumPy alone (importing scikit-learn and
    the part of SciPy it loads cost a report about 1.5 s, several times the computation):

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


def default_clusters(n: int) -> int:
    """``max(2, round(sqrt(n / 2)))``, but no more than ``n``."""
    return min(n, max(2, round(math.sqrt(n / 2))))


def kmeans(x: Tfidf, k: int, seed: int) -> IntArray:
    """Cluster labels from k-means as scikit-learn computes them (:func:`kmeans_labels`).
    Fewer distinct questions than ``k`` leaves clusters empty (not listed)."""
    if x.shape[1] == 0:  # no terms at all: every question is the same (zero) point
        return np.zeros(x.shape[0], dtype=np.int64)
    return kmeans_labels(x.rows(), k, seed)


def cluster_centroids(x: Tfidf, labels: IntArray, k: int) -> FloatArray:
    """Mean row of each cluster (zeros for an empty one), as a dense ``k x terms`` array
    (each sum taken over the cluster's rows in order)."""
    sums = np.zeros((k, x.shape[1]), dtype=np.float64)
    rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
    np.add.at(sums, (labels[rows], x.indices), x.data)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    return sums / np.maximum(sizes, 1.0)[:, None]


DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The official MiniLM sentence-embedding model on the Hugging Face Hub."""
INSTALL_HINT = "pip install 'gamut-eval[embeddings]'"


class EmbeddingsUnavailable(Exception):
    """The embeddings asked for cannot be computed here; the message says why."""


def embed(texts: Sequence[str], model: str = DEFAULT_EMBEDDING_MODEL) -> FloatArray:
    """Unit-length sentence embeddings of ``texts`` from ``model`` (a Hub name or a local
    folder in the sentence-transformers layout), computed on the CPU."""
    try:
        sentence_transformers = importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise EmbeddingsUnavailable(
            f"sentence-transformers is not installed (the optional 'embeddings' extra: "
            f"{INSTALL_HINT})"
        ) from exc
    try:
        encoder = sentence_transformers.SentenceTransformer(model, device="cpu")
    except Exception as exc:  # whatever the loader raises (offline, no such model, bad folder)
        raise EmbeddingsUnavailable(
            f"could not load the sentence-transformers model {model!r} "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    vectors = encoder.encode(
        list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
    )
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] != len(texts):
        raise EmbeddingsUnavailable(
            f"the model {model!r} returned embeddings of shape {array.shape} for "
            f"{len(texts)} questions"
        )
    return array


_EXAMPLES = 3
"""Example questions listed per template."""
_TOP_TERMS = 5
"""Terms listed per cluster."""


# --------------------------------------------------------------------------- report model


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class TemplateCount(_Frozen):
    """One interrogative template and how often it occurs."""

    template: str
    """The frame, e.g. ``what is this <X>`` (see :func:`question_template`)."""
    count: int
    """Questions with this template."""
    share: float
    """``count`` divided by the number of questions."""
    examples: tuple[str, ...]
    """Up to three of its questions (their text), in dataset order."""


class NearDuplicate(_Frozen):
    """Two questions whose vectors are at least as similar as the threshold."""

    a: str
    """Id of the question that comes first in the dataset."""
    b: str
    """Id of the other question."""
    similarity: float
    """Cosine similarity of the two questions' vectors, in [0, 1] for TF-IDF."""


class QuestionCluster(_Frozen):
    """One k-means cluster of questions."""

    cluster: int
    """Cluster number: 0 is the largest (ties: the one whose first question comes first)."""
    size: int
    """Questions in the cluster."""
    questions: tuple[str, ...]
    """Ids of its questions, in dataset order."""
    top_terms: tuple[str, ...]
    """Up to five terms (words or two-word phrases) with the largest weight in the mean
    TF-IDF vector of its questions, largest first (ties alphabetical)."""


class DiversityReport(_Frozen):
    """How diverse a dataset's questions are (the paper's Section 6)."""

    questions: int
    """Questions analysed."""
    templates: tuple[TemplateCount, ...]
    """Every template found, most frequent first (ties alphabetical)."""
    near_duplicates: tuple[NearDuplicate, ...]
    """Every pair at or above the threshold, most similar first (ties by ids)."""
    clusters: tuple[QuestionCluster, ...]
    """The k-means clusters, largest first; empty ones are not listed."""
    mean_pairwise_similarity: float
    """Mean cosine similarity over all pairs of distinct questions (0.0 for one question);
    lower is more diverse."""
    distinct_template_share: float
    """Distinct templates divided by questions; higher is more diverse (1.0: no two
    questions share a template)."""
    method: Literal["tfidf", "embeddings"]
    """What the similarities and clusters were computed on."""
    embedding_model: str | None = None
    """The sentence-transformers model (Hub name or local folder) the embeddings came from;
    None for TF-IDF."""
    embeddings_fallback: str | None = None
    """Why embeddings were asked for but TF-IDF was used (the extra or the model missing);
    None otherwise."""


# --------------------------------------------------------------------------- results


def _near_duplicates(
    gram: FloatArray, ids: Sequence[str], threshold: float
) -> tuple[NearDuplicate, ...]:
    a, b = np.nonzero(np.triu(gram, k=1) >= threshold - TOLERANCE)
    pairs = sorted(
        ((min(float(gram[i, j]), 1.0), int(i), int(j)) for i, j in zip(a, b, strict=True)),
        key=lambda p: (-p[0], p[1], p[2]),
    )
    return tuple(NearDuplicate(a=ids[i], b=ids[j], similarity=s) for s, i, j in pairs)


def _mean_pairwise(gram: FloatArray) -> float:
    n = gram.shape[0]
    if n < 2:
        return 0.0
    return float((gram.sum() - np.trace(gram)) / (n * (n - 1)))


def _clusters(labels: IntArray, terms: Tfidf, ids: Sequence[str]) -> tuple[QuestionCluster, ...]:
    k = int(labels.max()) + 1
    centroids = cluster_centroids(terms, labels, k)
    members = [np.flatnonzero(labels == j) for j in range(k)]
    order = sorted(
        (j for j in range(k) if members[j].size), key=lambda j: (-members[j].size, members[j][0])
    )
    out = []
    for number, j in enumerate(order):
        weights = centroids[j]
        ranked = sorted(
            np.flatnonzero(weights > 0), key=lambda t: (-weights[t], terms.vocabulary[t])
        )
        out.append(
            QuestionCluster(
                cluster=number,
                size=int(members[j].size),
                questions=tuple(ids[int(i)] for i in members[j]),
                top_terms=tuple(terms.vocabulary[t] for t in ranked[:_TOP_TERMS]),
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- entry point


def question_diversity(
    dataset: Dataset,
    *,
    near_duplicate_threshold: float = 0.8,
    clusters: int | None = None,
    embeddings: bool | str = False,
    seed: int = 0,
) -> DiversityReport:
    """Templates, near duplicates and clusters of the dataset's (multimodal) questions.

    ``near_duplicate_threshold``: the cosine similarity, in (0, 1], at or above which two
    questions are reported as near duplicates. ``clusters``: k for k-means (default
    ``max(2, round(sqrt(n / 2)))``, at most ``n``). ``embeddings``: compare sentence
    embeddings instead of TF-IDF vectors: True for the official
    ``sentence-transformers/all-MiniLM-L6-v2``, or a model name or local folder (needs
    ``pip install 'gamut-eval[embeddings]'``; without it, or without the model, TF-IDF is
    used and ``embeddings_fallback`` says why). ``seed``: seeds the k-means++ draw; the same
    seed gives the same clusters.
    """
    records = dataset.records
    if not records:
        raise InputError("the dataset has no questions to analyse")
    if not 0.0 < near_duplicate_threshold <= 1.0:
        raise InputError(
            f"near_duplicate_threshold must be in (0, 1], got {near_duplicate_threshold}"
        )
    n = len(records)
    k = default_clusters(n) if clusters is None else clusters
    if not 1 <= k <= n:
        raise InputError(f"clusters must be between 1 and the {n} questions, got {k}")
    ids = [r.id for r in records]
    texts = [r.question for r in records]

    terms = tfidf(texts)
    vectors, model, fallback = terms, None, None
    if embeddings:
        model = DEFAULT_EMBEDDING_MODEL if embeddings is True else str(embeddings)
        try:
            vectors = Tfidf.from_dense(embed(texts, model))
        except EmbeddingsUnavailable as exc:
            model, fallback = None, f"TF-IDF used instead of embeddings: {exc}"
    gram = cosine_gram(vectors)
    labels = kmeans(vectors, k, seed)

    by_template: dict[str, list[str]] = {}
    for text in texts:
        by_template.setdefault(question_template(text), []).append(text)
    templates = sorted(by_template.items(), key=lambda t: (-len(t[1]), t[0]))
    return DiversityReport(
        questions=n,
        templates=tuple(
            TemplateCount(
                template=template,
                count=len(members),
                share=len(members) / n,
                examples=tuple(members[:_EXAMPLES]),
            )
            for template, members in templates
        ),
        near_duplicates=_near_duplicates(gram, ids, near_duplicate_threshold),
        clusters=_clusters(labels, terms, ids),
        mean_pairwise_similarity=_mean_pairwise(gram),
        distinct_template_share=len(by_template) / n,
        method="embeddings" if model else "tfidf",
        embedding_model=model,
        embeddings_fallback=fallback,
    )
