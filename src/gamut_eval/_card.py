"""A dataset card for a benchmark pushed to the Hugging Face Hub: :func:`dataset_card_files`.

The Hub's viewer and ``datasets.load_dataset(REPO)`` read a repository through its card
(``README.md`` with YAML front matter): ``configs`` names the data files, ``dataset_info``
their features, ``license`` the terms. A gamut dataset (``dataset.jsonl``, images beside it)
is nested (a meta-rubric per question, whose items differ in shape from type to type), which
no single Arrow schema holds, so the card points at a flat table written beside it for the
viewer and for ``datasets``: one row per question with its text fields, its image as an
``Image`` (the bytes embedded, as the Hub's own Parquet files hold them), and the
meta-rubric and the compiled checklist as JSON text. The gamut dataset itself is pushed as
it is, for ``--dataset hf://...``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from gamut_eval._tables import FORMATS
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.hub import CARD_MARKER

VIEWER_TABLE = "viewer/test-00000-of-00001.parquet"
"""The flat table for the viewer and ``datasets``, relative to the pushed dataset's folder."""
_TEXT_FIELDS = ("id", "question", "question_text_only", "entity", "domain", "popularity")
_JSON_FIELDS = ("meta_rubric", "checklist", "metadata")


def pushed_dataset(source: Path) -> Path | None:
    """The dataset file ``source`` is or holds (``dataset.jsonl``, ``.json`` or
    ``.parquet`` in a folder that is not a run folder), or None when it is not a dataset."""
    if source.is_file():
        return source if source.suffix.lower() in FORMATS else None
    if (source / "run.json").exists():
        return None
    for suffix in FORMATS:
        if (source / f"dataset{suffix}").is_file():
            return source / f"dataset{suffix}"
    return None


def _features() -> dict[str, Any]:
    """The table's features in the ``datasets`` library's own form (``Features.to_dict``)."""
    text = {"dtype": "string", "_type": "Value"}
    features: dict[str, Any] = dict.fromkeys(_TEXT_FIELDS, text)
    features["image"] = {"_type": "Image"}
    features.update(dict.fromkeys(_JSON_FIELDS, text))
    features["checks"] = {"dtype": "int64", "_type": "Value"}
    return features


def _yaml_features() -> list[dict[str, str]]:
    """The same features as a card's ``dataset_info.features`` lists them."""
    kinds = {"Image": "image"}
    return [
        {"name": name, "dtype": kinds.get(spec["_type"], spec.get("dtype", "string"))}
        for name, spec in _features().items()
    ]


def _viewer_table(dataset: Dataset) -> bytes:
    """The flat Parquet table of ``dataset``, with the features in its schema metadata
    (where ``datasets`` reads them)."""
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    checklists = dataset.checklists()
    columns: dict[str, list[Any]] = {name: [] for name in _features()}
    for record in dataset.records:
        for name in _TEXT_FIELDS:
            columns[name].append(getattr(record, name))
        image = dataset.image_path(record)
        columns["image"].append(
            None if image is None else {"bytes": image.read_bytes(), "path": image.name}
        )
        columns["meta_rubric"].append(record.meta_rubric.model_dump_json())
        columns["checklist"].append(checklists[record.id].model_dump_json())
        columns["metadata"].append(json.dumps(record.metadata, ensure_ascii=False))
        columns["checks"].append(len(checklists[record.id].checks))
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema(
        [
            (
                name,
                image_type if name == "image" else pa.int64() if name == "checks" else pa.string(),
            )
            for name in columns
        ],
        metadata={"huggingface": json.dumps({"info": {"features": _features()}})},
    )
    table = pa.Table.from_pydict(columns, schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _card(
    dataset: Dataset, name: str, data_file: str, pushed_as: str, license: str, description: str
) -> str:
    import yaml

    images = sum(r.image is not None for r in dataset.records)
    checks = sum(len(c.checks) for c in dataset.checklists().values())
    front = {
        "license": license,
        "pretty_name": name,
        "tags": ["gamut-eval", "rubric", "long-form", "evaluation"],
        "configs": [
            {"config_name": "default", "data_files": [{"split": "test", "path": data_file}]}
        ],
        "dataset_info": {"features": _yaml_features()},
    }
    about = description or (
        f"A benchmark of {_count(len(dataset), 'question')} ({images} with an image) graded with "
        f"gamut-eval: each question has a meta-rubric that compiles into {checks} binary "
        "checks in all, which a judge grades answers against."
    )
    return (
        f"---\n{yaml.safe_dump(front, sort_keys=False, allow_unicode=True)}---\n\n"
        f"{CARD_MARKER}\n\n# {name}\n\n{about}\n\n"
        "## Use\n\n"
        f"With gamut-eval, the dataset is `{pushed_as}`: every command that takes a dataset "
        "(`gamut run`, `gamut judge`, the Inspect task) takes this path.\n\n"
        f'With `datasets`: `load_dataset("{name}")` gives the `test` split: one row per '
        "question, its image as an `Image`, and its meta-rubric and compiled checklist as "
        "JSON text (`json.loads`).\n"
    )


def dataset_card_files(
    source: Path,
    repo_id: str,
    path_in_repo: str,
    *,
    license: str = "unknown",
    description: str = "",
) -> dict[str, bytes]:
    """The files a pushed dataset adds (repository path -> content): the card
    ``README.md`` at the repository's root and the viewer table beside the dataset; {} when
    ``source`` is not a dataset (a run folder, another file). The dataset is loaded (and
    so checked) first: an invalid one raises ``InputError`` before anything is sent."""
    data = pushed_dataset(source)
    if data is None:
        return {}
    if not license.strip():
        raise InputError("the card needs a license (a Hub license id such as cc-by-4.0)")
    dataset = load_dataset(data)
    if source.is_file():
        folder = path_in_repo.rpartition("/")[0] if path_in_repo else ""
        pushed = path_in_repo or source.name
    else:
        folder = path_in_repo
        pushed = f"{path_in_repo}/{data.name}".lstrip("/")
    table = f"{folder}/{VIEWER_TABLE}".lstrip("/")
    card = _card(dataset, repo_id, table, f"hf://datasets/{repo_id}/{pushed}", license, description)
    return {"README.md": card.encode(), table: _viewer_table(dataset)}
