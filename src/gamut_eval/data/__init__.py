"""Data that ships with the package: the bundled sample benchmark."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["SAMPLE_ALIAS", "resolve_dataset_path", "sample_dir"]

SAMPLE_ALIAS = "sample"
"""Pass ``--dataset sample`` (or ``-T dataset=sample``) for the bundled sample benchmark."""


def sample_dir() -> Path:
    """Folder of the bundled sample: dataset.jsonl, responses.jsonl, gold.jsonl, images/."""
    return Path(str(files("gamut_eval.data") / "sample"))


def resolve_dataset_path(dataset: str | Path | None) -> Path:
    """A dataset path, with ``sample`` (or nothing) meaning the bundled sample benchmark, and
    ``hf://datasets/OWNER/NAME/PATH`` a file on the Hugging Face Hub (fetched with the files
    beside it into the Hub cache; see :mod:`gamut_eval.hub`)."""
    if dataset is None or str(dataset) == SAMPLE_ALIAS:
        return sample_dir() / "dataset.jsonl"
    if isinstance(dataset, str) and dataset.startswith("hf://"):
        from gamut_eval.hub import download

        return download(dataset)
    return Path(dataset)
