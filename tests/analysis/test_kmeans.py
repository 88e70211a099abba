"""Question diversity's numerics in NumPy against scikit-learn's and SciPy's: the same
numbers, bit for bit, not merely close.

``data/sklearn_diversity.json`` holds the reports the scikit-learn implementation gave
(``TfidfVectorizer``, ``KMeans``, SciPy's sparse products) on fixed inputs before it was
replaced; the reports now are equal to them. Where scikit-learn is installed (the dev
environment), the vectors, similarities, labels and centroids are compared with its own
on more inputs, embeddings-like dense vectors and empty clusters included.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gamut_eval import load_dataset
from gamut_eval.analysis._diversity import (
    SparseRows,
    Tfidf,
    _tolerance,
    _update,
    cluster_centroids,
    cosine_gram,
    kmeans,
    kmeans_labels,
    question_diversity,
    terms,
    tfidf,
)
from gamut_eval.data import sample_dir
from gamut_eval.dataset import Dataset, DatasetRecord
from gamut_eval.rubric import MetaRubric
from gamut_eval.testing import paper_questions

REFERENCE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "sklearn_diversity.json").read_text(encoding="utf-8")
)
LEGACY: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "legacy_numerics.json").read_text(encoding="utf-8")
)
SAMPLE = load_dataset(sample_dir() / "dataset.jsonl")


def _dataset(questions: list[str]) -> Dataset:
    records = []
    for i, question in enumerate(questions):
        meta = MetaRubric.model_validate(
            {"id": f"q{i}", "question": question,
             "items": [{"id": "x", "type": "fact", "tier": "context", "statement": "x"}]}
        )  # fmt: skip
        records.append(DatasetRecord(id=f"q{i}", question=question, meta_rubric=meta))
    return Dataset(path=Path("toy.jsonl"), records=tuple(records))


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_reports_equal_the_scikit_learn_ones(case: str) -> None:
    stored = REFERENCE[case]
    data = SAMPLE if stored["questions"] == "sample" else _dataset(stored["questions"])
    report = question_diversity(data, **stored["options"])
    # JSON both ways: floats compared exactly, tuples and lists alike
    assert json.loads(report.model_dump_json()) == stored["report"]


# -- by hand ------------------------------------------------------------------------------


def test_an_empty_cluster_takes_the_point_farthest_from_its_center() -> None:
    # Points p0 = (1, 0), p1 = (0, 1), p2 = (0, 2), all labelled 0; centers c0 = (0, 1),
    # c1 = (5, 5) has no point. Squared distances to c0: p0 2, p1 0, p2 1, so p0 moves to
    # cluster 1: c1 = (1, 0); c0 = mean of p1 and p2 = (0, 1.5). Shifts: c0 0.5,
    # c1 |(1, 0) - (5, 5)| = sqrt(41).
    rows = Tfidf.from_dense(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])).rows()
    from gamut_eval.analysis._diversity import _Points

    old = np.array([[0.0, 1.0], [5.0, 5.0]])
    new, shift = _update(_Points.of(rows), old, np.zeros(3, dtype=np.int64))
    assert new.tolist() == [[0.0, 1.5], [1.0, 0.0]]
    assert shift.tolist() == pytest.approx([0.5, 41**0.5], abs=1e-15)


def test_tolerance_is_a_ten_thousandth_of_the_mean_column_variance() -> None:
    # Columns (1, 0, 2) and (0, 0, 3): variances 2/3 and 2; mean 4/3; times 1e-4.
    rows = Tfidf.from_dense(np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 3.0]])).rows()
    assert _tolerance(rows) == pytest.approx(4 / 3 * 1e-4, rel=1e-12)


def test_two_clear_groups_by_hand() -> None:
    # Two points near (1, 0) and two near (0, 1): whatever the seeding, k = 2 splits them so.
    x = Tfidf.from_dense(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]]))
    for seed in range(5):
        labels = kmeans(x, 2, seed).tolist()
        assert labels[0] == labels[1] != labels[2] == labels[3]


def test_rows_keep_the_order_their_terms_first_appear_in() -> None:
    # "tart" is seen first, then "apple": row 1 stores tart's column (9) before apple's (0),
    # as scikit-learn stores them, and its sums go in that order.
    x = tfidf(["Green tart", "Apple tart"])
    assert x.vocabulary[x.indices[0]] == "green"
    row = x.indices[x.indptr[1] : x.indptr[2]].tolist()
    assert [x.vocabulary[c] for c in row] == ["tart", "apple", "apple tart"]


# -- against scikit-learn and SciPy, where installed ---------------------------------------


def _texts() -> dict[str, list[str]]:
    duplicates = ["What is this cat?"] * 3 + ["What is it?", "Which dog is this?"] * 2
    return {
        "sample": [r.question for r in SAMPLE.records],
        "synthetic": LEGACY["synthetic"]["texts"],
        "duplicates": [*duplicates, "Why?", "What is this?"],
        "paper": paper_questions(600, seed=2),
    }


def _library(texts: list[str]) -> tuple[tuple[str, ...], Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        analyzer=terms, sublinear_tf=True, smooth_idf=True, norm="l2", dtype=np.float64
    )
    matrix = vectorizer.fit_transform(texts).tocsr()
    return tuple(str(t) for t in vectorizer.get_feature_names_out()), matrix


def _library_labels(matrix: Any, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    model = KMeans(n_clusters=k, n_init=10, random_state=seed, algorithm="lloyd")
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return np.asarray(model.fit_predict(matrix))


@pytest.mark.parametrize("case", ["sample", "synthetic", "duplicates", "paper"])
def test_vectors_and_similarities_are_scikit_learns(case: str) -> None:
    pytest.importorskip("sklearn")
    texts = _texts()[case]
    vocabulary, matrix = _library(texts)
    x = tfidf(texts)
    assert x.vocabulary == vocabulary
    assert x.indptr.tolist() == matrix.indptr.tolist()
    assert x.indices.tolist() == matrix.indices.tolist()  # the same order within rows
    assert x.data.tolist() == matrix.data.tolist()
    assert cosine_gram(x).tolist() == (matrix @ matrix.T).toarray().tolist()


@pytest.mark.parametrize(
    ("case", "k", "seeds"),
    [("sample", 5, range(4)), ("sample", 12, [0]), ("synthetic", 4, [0, 1]),
     ("synthetic", 11, range(4)), ("duplicates", 5, range(3)), ("paper", 17, [0])],
)  # fmt: skip
def test_labels_and_centroids_are_scikit_learns(case: str, k: int, seeds: range) -> None:
    pytest.importorskip("sklearn")
    from scipy import sparse

    texts = _texts()[case]
    _, matrix = _library(texts)
    x = tfidf(texts)
    for seed in seeds:
        labels = kmeans(x, k, seed)
        assert labels.tolist() == _library_labels(matrix, k, seed).tolist(), seed
        n = len(texts)
        membership = sparse.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
        sizes = np.bincount(labels, minlength=k).astype(np.float64)
        expected = (membership @ matrix).toarray() / np.maximum(sizes, 1.0)[:, None]
        assert cluster_centroids(x, labels, k).tolist() == expected.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_dense_vectors_with_negative_values_cluster_as_in_scikit_learn(seed: int) -> None:
    # Embeddings: dense unit rows with signs, and zeros that are not stored.
    pytest.importorskip("sklearn")
    from scipy import sparse

    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(4, 24))
    points = np.repeat(centers, 15, axis=0) + rng.normal(scale=0.6, size=(60, 24))
    points[rng.random(points.shape) < 0.2] = 0.0
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    x = Tfidf.from_dense(points)
    matrix = sparse.csr_matrix(points)
    assert cosine_gram(x).tolist() == (matrix @ matrix.T).toarray().tolist()
    for k in (3, 7):
        assert kmeans_labels(x.rows(), k, seed).tolist() == (
            _library_labels(matrix, k, seed).tolist()
        )


def test_sparse_rows_pad_in_stored_order() -> None:
    rows = SparseRows(
        data=np.array([3.0, 1.0, 2.0]),
        indices=np.array([2, 0, 1]),
        indptr=np.array([0, 2, 2, 3]),
        columns=3,
    )
    columns, values, stored = rows.padded()
    assert columns.tolist() == [[2, 0], [0, 0], [1, 0]]
    assert values.tolist() == [[3.0, 1.0], [0.0, 0.0], [2.0, 0.0]]
    assert stored.tolist() == [[True, True], [False, False], [True, False]]
