"""Sentence embeddings for the diversity analysis, through sentence-transformers (the
optional ``embeddings`` extra, imported only when asked for).

The model is the official ``sentence-transformers/all-MiniLM-L6-v2`` unless another name or
a local folder is given; sentence-transformers loads it and keeps it in its own cache
(Hugging Face's, ``HF_HOME``), downloading it the first time only. When the library or the
model cannot be had, :func:`embed` raises :class:`EmbeddingsUnavailable` and the analysis
falls back to TF-IDF, saying why.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import numpy as np

from gamut_eval.analysis._diversity_vectors import FloatArray

__all__ = ["DEFAULT_EMBEDDING_MODEL", "EmbeddingsUnavailable", "embed"]

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
