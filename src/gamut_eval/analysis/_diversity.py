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

**Clusters.** scikit-learn's k-means on the question vectors: ten runs of greedy k-means++
seeding and Lloyd iterations from ``random_state=seed`` (so the same seed gives the same
clusters), keeping the run with the smallest inertia. Each cluster is described by the
terms with the largest weight in its TF-IDF centroid.

The vectors are TF-IDF by default (:func:`tfidf`, scikit-learn's ``TfidfVectorizer`` with
sublinear tf and smooth idf, sparse throughout, so paper scale, 1,813 questions, takes well
under a second). With ``embeddings`` they are sentence embeddings from a sentence-transformers
model (the official ``sentence-transformers/all-MiniLM-L6-v2`` by default; the optional
``embeddings`` extra); cluster terms still come from TF-IDF, since an embedding has no
terms. When the extra or the model is not there, the analysis falls back to TF-IDF and
says why in ``embeddings_fallback``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from gamut_eval.analysis._diversity_embed import (
    DEFAULT_EMBEDDING_MODEL,
    EmbeddingsUnavailable,
    embed,
)
from gamut_eval.analysis._diversity_text import STOPWORDS, question_template
from gamut_eval.analysis._diversity_vectors import (
    TOLERANCE,
    FloatArray,
    IntArray,
    Tfidf,
    cluster_centroids,
    cosine_gram,
    default_clusters,
    kmeans,
    tfidf,
)
from gamut_eval.dataset import Dataset
from gamut_eval.errors import InputError

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
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
