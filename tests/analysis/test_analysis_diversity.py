"""Question diversity: TF-IDF, templates, near duplicates and k-means against hand-computed
values, the bundled sample, paper scale, and the embeddings extra's install hint."""

from __future__ import annotations

import random
import sys
import types
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from gamut_eval import load_dataset
from gamut_eval.analysis._diversity import (
    DEFAULT_EMBEDDING_MODEL,
    DiversityReport,
    default_clusters,
    question_diversity,
    question_template,
    tfidf,
)
from gamut_eval.data import sample_dir
from gamut_eval.dataset import Dataset, DatasetRecord
from gamut_eval.errors import InputError
from gamut_eval.rubric import MetaRubric
from gamut_eval.testing import paper_questions


def dataset(*questions: str) -> Dataset:
    """Questions q0, q1, ... with a one-check meta-rubric each."""
    records = []
    for i, question in enumerate(questions):
        meta = MetaRubric.model_validate(
            {
                "id": f"q{i}",
                "question": question,
                "items": [{"id": "x", "type": "fact", "tier": "context", "statement": "x"}],
            }
        )
        records.append(DatasetRecord(id=f"q{i}", question=question, meta_rubric=meta))
    return Dataset(path=Path("toy.jsonl"), records=tuple(records))


# Three documents. "The" is a stopword; each text's terms are its words plus bigrams:
#   d0 "The red apple pie": red, apple, pie, "red apple", "apple pie"
#   d1 "Apple apple tart":  apple (tf 2), tart, "apple apple", "apple tart"
#   d2 "Green tart":        green, tart, "green tart"
# n = 3; apple and tart have df 2, every other term df 1. Smooth idf = ln((1+n)/(1+df)) + 1:
#   df 1: A = 1 + ln 2   = 1.6931472;  df 2: B = 1 + ln(4/3) = 1.2876821
# Raw weights (1 + ln tf) * idf; only d1's apple has tf 2: (1 + ln 2) * B = A*B = 2.1802353.
#   d0: red A, apple B, pie A, "red apple" A, "apple pie" A
#       |d0|^2 = 4 A^2 + B^2 = 13.1251146, |d0| = 3.6228600
#   d1: apple A*B, tart B, "apple apple" A, "apple tart" A
#       |d1|^2 = (A B)^2 + B^2 + 2 A^2 = 12.1450457, |d1| = 3.4849743
#   d2: green A, tart B, "green tart" A
#       |d2|^2 = 2 A^2 + B^2 = 7.3916199, |d2| = 2.7187534
# Normalised: d0 apple = B/|d0| = 0.3554325, d0 red = A/|d0| = 0.4673510,
#   d1 apple = A*B/|d1| = 0.6256101, d1 tart = B/|d1| = 0.3694954,
#   d1 "apple apple" = A/|d1| = 0.4858421, d2 tart = B/|d2| = 0.4736296.
# Cosines: d0.d1 share only apple: 0.3554325 * 0.6256101 = 0.2223622;
#   d1.d2 share only tart: 0.3694954 * 0.4736296 = 0.1750040; d0.d2 share nothing: 0.
#   Mean over the three pairs: (0.2223622 + 0 + 0.1750040) / 3 = 0.1324554.
TOY = ("The red apple pie", "Apple apple tart", "Green tart")


def test_tfidf_weights_by_hand() -> None:
    x = tfidf(TOY)
    assert x.vocabulary == (
        "apple",
        "apple apple",
        "apple pie",
        "apple tart",
        "green",
        "green tart",
        "pie",
        "red",
        "red apple",
        "tart",
    )
    assert x.weight(0, "apple") == pytest.approx(0.3554325, abs=1e-7)
    assert x.weight(0, "red") == pytest.approx(0.4673510, abs=1e-7)
    assert x.weight(1, "apple") == pytest.approx(0.6256101, abs=1e-7)
    assert x.weight(1, "tart") == pytest.approx(0.3694954, abs=1e-7)
    assert x.weight(1, "apple apple") == pytest.approx(0.4858421, abs=1e-7)
    assert x.weight(2, "tart") == pytest.approx(0.4736296, abs=1e-7)
    assert x.weight(0, "the") == 0.0  # stopword
    assert x.weight(2, "apple") == 0.0
    dense = x.dense()
    assert np.linalg.norm(dense, axis=1) == pytest.approx([1.0, 1.0, 1.0])
    assert dense @ dense.T == pytest.approx(
        np.array([[1.0, 0.2223622, 0.0], [0.2223622, 1.0, 0.1750040], [0.0, 0.1750040, 1.0]]),
        abs=1e-7,
    )


def test_mean_pairwise_similarity_by_hand() -> None:
    report = question_diversity(dataset(*TOY), near_duplicate_threshold=0.2)
    assert report.mean_pairwise_similarity == pytest.approx(0.1324554, abs=1e-7)
    # Only d0-d1 (0.2224) reaches 0.2; d1-d2 is 0.1750.
    assert [(d.a, d.b) for d in report.near_duplicates] == [("q0", "q1")]
    assert report.near_duplicates[0].similarity == pytest.approx(0.2223622, abs=1e-7)


def test_a_text_of_stopwords_only_is_a_zero_row() -> None:
    x = tfidf(["What is this?", "red apple"])
    assert x.dense()[0].tolist() == [0.0, 0.0, 0.0]
    report = question_diversity(dataset("What is this?", "What is it?"))
    assert report.mean_pairwise_similarity == 0.0


@pytest.mark.parametrize(
    ("question", "template"),
    [
        ("What is this dish, what goes into it, and how is it eaten?", "what is this <X>"),
        ("What kind of coffee is this, and how is it made?", "what kind of <X> is this"),
        ("What rocket is this, and how does it reach orbit?", "what <X> is this"),
        ("What are these coins in the photo, and how were they made?", "what are these <X>"),
        (
            "How does this engine's turbocharger improve on the previous generation?",
            "how does this <X>",
        ),
        ("what kind of car is this and how does it perform?", "what kind of <X> is this"),
        ("What's this plant and where's it from?", "what is this <X>"),
        ("What is this and where is it from?", "what is this"),
        # A preamble before the wh-word is skipped ...
        (
            "This photo came out blurry, but what kind of clock is this, and how accurate is it?",
            "what kind of <X> is this",
        ),
        # ... but a yes/no question keeps its opening auxiliary.
        ("Is this plant safe for cats, and what should I do?", "is this <X>"),
        ("How many legs does this insect have?", "how many <X>"),
        ("Why are these leaves turning yellow?", "why are these <X>"),
        ("Hmm.", "<X>"),
    ],
)
def test_question_template(question: str, template: str) -> None:
    assert question_template(question) == template


def test_templates_are_counted_most_frequent_first() -> None:
    report = question_diversity(
        dataset(
            "What is this tower, and why does it lean?",
            "What plant is this, and is it safe for pets?",
            "What is this dish, and how is it eaten?",
            "What kind of cat is this?",
            "What is this puzzle, and who invented it?",
        )
    )
    assert [(t.template, t.count) for t in report.templates] == [
        ("what is this <X>", 3),
        ("what <X> is this", 1),  # ties alphabetical: "<" sorts before "k"
        ("what kind of <X> is this", 1),
    ]
    assert report.templates[0].share == pytest.approx(3 / 5)
    assert report.templates[0].examples == (
        "What is this tower, and why does it lean?",
        "What is this dish, and how is it eaten?",
        "What is this puzzle, and who invented it?",
    )
    assert report.distinct_template_share == pytest.approx(3 / 5)


def test_near_identical_questions_are_near_duplicates_and_unrelated_ones_are_not() -> None:
    questions = dataset(
        "How was this red brick lighthouse built and who kept its lamp burning at night?",
        "What engine powers this racing motorcycle?",
        "How was this red brick lighthouse built, and who kept its lamp burning at night time?",
        "Which bees pollinate this orchid flower?",
        "What engine powers this racing motorcycle?",
    )
    report = question_diversity(questions)
    assert [(d.a, d.b) for d in report.near_duplicates] == [("q1", "q4"), ("q0", "q2")]
    assert report.near_duplicates[0].similarity == pytest.approx(1.0)
    # 15 shared terms (8 words, 7 bigrams) and q2's 2 more ("time", "night time"):
    # about 15 / sqrt(15 * 17) = 0.94 before idf weighting.
    assert 0.85 < report.near_duplicates[1].similarity < 0.99
    # At a threshold of 1 only the identical pair remains.
    strict = question_diversity(questions, near_duplicate_threshold=1.0)
    assert [(d.a, d.b) for d in strict.near_duplicates] == [("q1", "q4")]


SEPARATED = (
    "How is this apple pie baked with apple slices?",
    "Which apple goes into this apple pie crust?",
    "Why does this apple pie taste of apple and cinnamon?",
    "How fast can this sports car engine make the car go?",
    "Which engine does this car use and how loud is the car?",
    "What fuel does this car engine burn?",
    "Where is this apple orchard and when are apple trees picked?",
)


def test_kmeans_finds_clearly_separated_groups() -> None:
    report = question_diversity(dataset(*SEPARATED), clusters=2)
    assert [(c.cluster, c.size, c.questions) for c in report.clusters] == [
        (0, 4, ("q0", "q1", "q2", "q6")),
        (1, 3, ("q3", "q4", "q5")),
    ]
    # "apple" (in every question of cluster 0) and "car" (in every one of cluster 1)
    # outweigh the terms of a single question in each centroid.
    assert report.clusters[0].top_terms[0] == "apple"
    assert report.clusters[1].top_terms[0] == "car"
    assert len(report.clusters[0].top_terms) == 5


def test_kmeans_is_deterministic_for_a_seed() -> None:
    many = dataset(*(SEPARATED * 3))
    first = question_diversity(many, clusters=4, seed=7)
    assert question_diversity(many, clusters=4, seed=7) == first
    for seed in range(20):  # the two topics never share a cluster, whatever the seed
        for cluster in question_diversity(many, clusters=2, seed=seed).clusters:
            topics = {int(q[1:]) % 7 in (3, 4, 5) for q in cluster.questions}
            assert len(topics) == 1


def test_sparse_similarities_match_the_dense_product() -> None:
    # 200 questions: "apple" and "pie" are in 100 of them, past the 64 at which a term's
    # products go through the dense matrix product rather than pair by pair.
    rng = random.Random(3)
    questions = [
        f"Why is this {rng.choice(['apple pie', 'car engine'])} {rng.choice(['hot', 'red'])} "
        f"and {rng.choice([f'word{i}' for i in range(40)])}?"
        for _ in range(200)
    ]
    dense = tfidf(questions).dense()
    cosines = dense @ dense.T
    n = len(questions)
    expected_mean = (cosines.sum() - np.trace(cosines)) / (n * (n - 1))
    expected_pairs = int((np.triu(cosines, k=1) >= 0.9 - 1e-9).sum())
    report = question_diversity(dataset(*questions), near_duplicate_threshold=0.9)
    assert report.mean_pairwise_similarity == pytest.approx(expected_mean, rel=1e-12)
    assert len(report.near_duplicates) == expected_pairs > 0
    for pair in report.near_duplicates[:50]:
        i, j = int(pair.a[1:]), int(pair.b[1:])
        assert pair.similarity == pytest.approx(min(cosines[i, j], 1.0), abs=1e-12)


@pytest.mark.parametrize(("n", "k"), [(1, 1), (2, 2), (12, 2), (50, 5), (1813, 30)])
def test_default_cluster_count(n: int, k: int) -> None:
    # max(2, round(sqrt(n / 2))), at most n: sqrt(25) = 5; sqrt(906.5) = 30.11.
    assert default_clusters(n) == k


def test_bad_arguments_are_input_errors() -> None:
    toy = dataset(*TOY)
    with pytest.raises(InputError, match="near_duplicate_threshold"):
        question_diversity(toy, near_duplicate_threshold=0.0)
    with pytest.raises(InputError, match="near_duplicate_threshold"):
        question_diversity(toy, near_duplicate_threshold=1.5)
    with pytest.raises(InputError, match="clusters"):
        question_diversity(toy, clusters=4)
    with pytest.raises(InputError, match="clusters"):
        question_diversity(toy, clusters=0)
    with pytest.raises(InputError, match="no questions"):
        question_diversity(Dataset(path=Path("empty.jsonl"), records=()))


def test_sample_dataset() -> None:
    sample = load_dataset(sample_dir() / "dataset.jsonl")
    report = question_diversity(sample)
    n = len(sample)
    assert report.questions == n
    assert report.method == "tfidf"
    assert sum(t.count for t in report.templates) == n
    assert sum(t.share for t in report.templates) == pytest.approx(1.0)
    assert report.distinct_template_share == pytest.approx(len(report.templates) / n)
    # The sample's questions mostly open "What is this X, ...", as the paper's do.
    assert report.templates[0].template == "what is this <X>"
    assert 0.0 < report.mean_pairwise_similarity < 0.2
    assert report.near_duplicates == ()  # the sample's questions are about distinct things
    assert len(report.clusters) == default_clusters(n)
    members = [q for c in report.clusters for q in c.questions]
    assert sorted(members) == sorted(r.id for r in sample)
    assert all(c.top_terms for c in report.clusters)
    DiversityReport.model_validate_json(report.model_dump_json())  # round-trips


def test_paper_scale() -> None:
    # Its time is measured by bench/bench_core.py; here, what it computes at that scale.
    questions = paper_questions(1813, seed=0)
    report = question_diversity(dataset(*questions))
    assert report.questions == 1813
    assert len(report.templates) == 4
    assert len(report.clusters) == 30
    assert sum(c.size for c in report.clusters) == 1813
    # The term vectors stay sparse: a row stores only its own question's terms (at most its
    # words and their bigrams), not a column for every term of the vocabulary.
    terms = tfidf(questions)
    assert terms.nnz <= sum(2 * len(q.split()) for q in questions)
    assert len(terms.indices) == len(terms.data) == terms.nnz


class _FakeSentenceTransformer:
    """sentence-transformers' ``SentenceTransformer`` at the boundary: records how it was
    loaded; each question's embedding is a unit vector chosen by its first letter, so the
    embedding clusters (a/b vs c) differ from what TF-IDF finds."""

    loaded: ClassVar[list[tuple[str, str]]] = []

    def __init__(self, model: str, device: str) -> None:
        self.loaded.append((model, device))

    def encode(self, texts: list[str], **options: object) -> np.ndarray:
        assert options["normalize_embeddings"] is True
        axis = {"A": 0, "B": 0, "C": 1}
        return np.array([np.eye(3)[axis[t[0]]] for t in texts])


@pytest.fixture
def fake_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> type[_FakeSentenceTransformer]:
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = _FakeSentenceTransformer  # type: ignore[attr-defined]
    _FakeSentenceTransformer.loaded = []
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return _FakeSentenceTransformer


EMBEDDED = ("Apple pie recipe", "Banana bread loaf", "Carrot cake icing")


def test_embeddings_load_the_official_model_through_sentence_transformers(
    fake_sentence_transformers: type[_FakeSentenceTransformer],
) -> None:
    report = question_diversity(dataset(*EMBEDDED), clusters=2, embeddings=True)
    assert fake_sentence_transformers.loaded == [("sentence-transformers/all-MiniLM-L6-v2", "cpu")]
    assert report.method == "embeddings"
    assert report.embedding_model == DEFAULT_EMBEDDING_MODEL
    assert report.embeddings_fallback is None
    # The embeddings make q0 and q1 the same point (TF-IDF gives them no shared term).
    assert [(d.a, d.b, d.similarity) for d in report.near_duplicates] == [("q0", "q1", 1.0)]
    assert report.mean_pairwise_similarity == pytest.approx(1 / 3)
    assert [c.questions for c in report.clusters] == [("q0", "q1"), ("q2",)]


def test_embeddings_take_a_model_name_or_local_folder(
    fake_sentence_transformers: type[_FakeSentenceTransformer], tmp_path: Path
) -> None:
    report = question_diversity(dataset(*EMBEDDED), clusters=2, embeddings=str(tmp_path))
    assert fake_sentence_transformers.loaded == [(str(tmp_path), "cpu")]
    assert report.embedding_model == str(tmp_path)


def test_without_the_extra_diversity_falls_back_to_tfidf_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None in sys.modules makes the import fail even where the package is installed.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    report = question_diversity(dataset(*TOY), embeddings=True)
    assert report.method == "tfidf"
    assert report.embedding_model is None
    assert report.embeddings_fallback is not None
    assert "pip install 'gamut-eval[embeddings]'" in report.embeddings_fallback
    assert report == question_diversity(dataset(*TOY)).model_copy(
        update={"embeddings_fallback": report.embeddings_fallback}
    )


def test_a_model_that_cannot_be_loaded_falls_back_to_tfidf(
    fake_sentence_transformers: type[_FakeSentenceTransformer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def offline(self: object, model: str, device: str) -> None:
        raise OSError(f"We couldn't connect to the Hub to load {model}")

    monkeypatch.setattr(fake_sentence_transformers, "__init__", offline)
    report = question_diversity(dataset(*TOY), embeddings="someone/missing-model")
    assert report.method == "tfidf"
    assert report.embeddings_fallback is not None
    assert "'someone/missing-model'" in report.embeddings_fallback
    assert "OSError: We couldn't connect" in report.embeddings_fallback
