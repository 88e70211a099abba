"""Where an imported table is read from: a local file, or a Hugging Face dataset file.

``hf://datasets/owner/name/path/in/repo.parquet`` (``owner/name@revision/...`` for a
branch, tag or commit) is downloaded once into the Hugging Face cache with
``huggingface_hub`` (the ``hub`` extra: ``pip install 'gamut-eval[hub]'``), which reads
``HF_TOKEN`` for gated sets and honours ``HF_HUB_OFFLINE``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from gamut_eval.errors import InputError

__all__ = ["TABLE_SUFFIXES", "local_table", "parse_hf_path"]

TABLE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
_HF = re.compile(r"^hf://datasets/(?P<repo>[^/@]+/[^/@]+)(?:@(?P<rev>[^/]+))?/(?P<file>.+)$")


def parse_hf_path(source: str) -> tuple[str, str | None, str]:
    """``(repo_id, revision, filename)`` of an ``hf://datasets/...`` path."""
    match = _HF.match(source)
    if match is None:
        raise InputError(
            f"{source}: a Hugging Face path is hf://datasets/OWNER/NAME[@REVISION]/FILE "
            "(a .jsonl, .json, .parquet or .csv file of the dataset repository)"
        )
    return match["repo"], match["rev"], match["file"]


def _suffix_ok(name: str, source: str) -> None:
    if not name.lower().endswith(TABLE_SUFFIXES):
        raise InputError(f"{source}: unknown table format; name a {', '.join(TABLE_SUFFIXES)} file")


def local_table(source: str) -> Path:
    """A local path to the table ``source`` names (downloading a Hugging Face file)."""
    if not source.startswith("hf://"):
        path = Path(source)
        _suffix_ok(path.name, source)
        if not path.is_file():
            raise InputError(f"{source}: file not found")
        return path
    repo, revision, filename = parse_hf_path(source)
    _suffix_ok(filename, source)
    if importlib.util.find_spec("huggingface_hub") is None:
        raise InputError(
            f"{source}: reading from the Hugging Face Hub needs huggingface_hub; install the "
            "`hub` extra: pip install 'gamut-eval[hub]'"
        )
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision))
    except Exception as exc:  # the hub's errors: not found, gated, offline, network
        message = f"{source}: cannot be read from the Hub: {type(exc).__name__}: {exc}"
        raise InputError(message) from None
