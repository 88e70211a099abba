"""Data that ships with the package: the bundled sample benchmark."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = [
    "HELD_OUT",
    "SAMPLE_ALIAS",
    "SAMPLE_CANDIDATES_ALIAS",
    "TUNING",
    "TUNING_QUESTIONS",
    "dataset_reference",
    "label_part",
    "resolve_dataset_path",
    "sample_dir",
]

SAMPLE_ALIAS = "sample"
"""Pass ``--dataset sample`` (or ``-T dataset=sample``) for the bundled sample benchmark."""
SAMPLE_CANDIDATES_ALIAS = "sample-candidates"
"""``gamut annotate import sample-candidates``: candidate questions over the sample's
images, for trying the review app's question round."""


TUNING = "tuning"
HELD_OUT = "held_out"
TUNING_QUESTIONS = frozenset(
    (
        "sample-bibimbap",
        "sample-espresso",
        "sample-leaning-tower",
        "sample-pompeii-coins",
        "sample-sunflower",
        "sample-traffic-light",
    )
)
"""The half of the bundled sample whose reference labels the offline judge's threshold is
fitted on: every other question in id order, from the first. The reference labels of the
other six questions are held out, and the offline judge's agreement is reported on them."""


def label_part(question_id: str) -> str:
    """``tuning`` or ``held_out``: which part of the sample's reference labels a question's
    labels belong to (``TUNING_QUESTIONS``)."""
    return TUNING if question_id in TUNING_QUESTIONS else HELD_OUT


def sample_dir() -> Path:
    """Folder of the bundled sample: dataset.jsonl, responses.jsonl, gold.jsonl (the
    reference labels written with the sample), images/."""
    return Path(str(files("gamut_eval.data") / "sample"))


def resolve_dataset_path(dataset: str | Path | None) -> Path:
    """A dataset path, with ``sample`` (or nothing) meaning the bundled sample benchmark, and
    ``hf://datasets/OWNER/NAME/PATH`` a file on the Hugging Face Hub (fetched with the files
    beside it into the Hub cache; see :mod:`gamut_eval.hub`)."""
    if dataset is None or str(dataset) == SAMPLE_ALIAS:
        return sample_dir() / "dataset.jsonl"
    if str(dataset) == SAMPLE_CANDIDATES_ALIAS:
        return sample_dir() / "candidates.jsonl"
    if isinstance(dataset, str) and dataset.startswith("hf://"):
        from gamut_eval.hub import download

        return download(dataset)
    return Path(dataset)


def dataset_reference(path: str | Path) -> str:
    """What another reader can pass to ``resolve_dataset_path`` for the dataset at ``path``:
    ``sample`` for the bundled sample, ``hf://datasets/OWNER/NAME@COMMIT/PATH`` for a copy
    in the Hugging Face Hub's cache, else the path relative to the working folder (never
    this machine's absolute path, which means nothing elsewhere)."""
    import os

    path = Path(path)
    try:
        if path.resolve() == (sample_dir() / "dataset.jsonl").resolve():
            return SAMPLE_ALIAS
    except OSError:
        pass
    parts = path.absolute().parts
    for index in range(len(parts) - 2, 0, -1):
        repo = parts[index - 1]
        if parts[index] == "snapshots" and repo.startswith("datasets--") and repo.count("--") >= 2:
            owner, name = repo.removeprefix("datasets--").split("--", 1)
            inside = "/".join(parts[index + 2 :])
            return f"hf://datasets/{owner}/{name}@{parts[index + 1]}/{inside}"
    return os.path.relpath(path)
