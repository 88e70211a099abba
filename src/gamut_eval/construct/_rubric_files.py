"""Reading meta-rubrics from any file the project writes, one per question.

``gamut build diff`` and ``gamut build refine --input`` accept:

- a single meta-rubric (YAML or JSON, as ``gamut validate`` reads it);
- rows (JSONL, a JSON array, Parquet) of one kind, told by their fields: drafts
  (``draft/drafts.jsonl``: ``question_id``, ``meta_rubric``, ``checklist``), refined records
  (``refine/refined.jsonl``: the same plus ``audit``), or dataset records (``id``,
  ``meta_rubric``, optionally a revised ``checklist``: ``dataset.jsonl``, the rubrics
  ``gamut build refine`` writes for the annotation app, and the app's export).

Rubrics are keyed by question id (the meta-rubric's ``id``). Every problem of every row is
reported (file, line, path, rule, value) before anything else happens.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic

from gamut_eval._files import parse_json, read_text
from gamut_eval._tables import read_rows
from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._models import Provenance
from gamut_eval.construct._question_models import AcceptedQuestion
from gamut_eval.construct._rubric_models import DraftRecord, RefinedRecord
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import (
    Checklist,
    MetaRubric,
    load_meta_rubric,
    pydantic_details,
    validate_meta_rubric,
)

__all__ = ["RowKind", "RubricRow", "read_rubric_file", "row_image", "row_question"]

RowKind = Literal["rubric", "draft", "refined", "dataset"]


@dataclass(frozen=True)
class RubricRow:
    """One question's meta-rubric as a file holds it."""

    kind: RowKind
    meta: MetaRubric
    line: int
    checklist: Checklist | None = None
    """The checklist the row carries (a dataset row's revised one, a stage record's compiled
    one); None when it has none."""
    record: DatasetRecord | None = None
    """The dataset record (``kind == "dataset"``)."""
    base: Path | None = None
    """The folder its relative image path is relative to."""

    @property
    def id(self) -> str:
        return self.meta.id


def _kind(data: Any) -> RowKind | None:
    if not isinstance(data, dict) or "meta_rubric" not in data:
        return None
    if "question_id" in data:
        return "refined" if "audit" in data else "draft"
    return "dataset" if "id" in data else None


def _row(data: dict[str, Any], kind: RowKind, line: int, path: Path) -> RubricRow:
    meta = validate_meta_rubric(data["meta_rubric"], prefix="meta_rubric")
    if kind == "dataset":
        record = DatasetRecord.model_validate({**data, "meta_rubric": meta})
        return RubricRow(kind, meta, line, record.checklist, record, path.parent)
    model = RefinedRecord if kind == "refined" else DraftRecord
    parsed = model.model_validate({**data, "meta_rubric": meta})
    return RubricRow(kind, meta, line, parsed.checklist)


def _rows(path: Path, errors: list[ErrorDetail]) -> list[RubricRow]:
    rows: list[RubricRow] = []
    first: tuple[RowKind, int] | None = None
    for line, data in read_rows(path, what="rubrics", errors=errors):
        where = f"{path}:{line}"
        kind = _kind(data)
        if kind is None:
            found = sorted(data) if isinstance(data, dict) else data
            errors.append(
                ErrorDetail(
                    "$",
                    "row-kind",
                    "expected a dataset record (`id`, "
                    "`meta_rubric`) or a stage record (`question_id`, "
                    "`meta_rubric`)",
                    found,
                ).in_file(where)
            )
            continue
        if first is None:
            first = (kind, line)
        elif first[0] != kind:
            errors.append(
                ErrorDetail(
                    "$",
                    "row-kind-same",
                    f"line {first[1]} is a {first[0]} row; every row of a file must be of one kind",
                    kind,
                ).in_file(where)
            )
            continue
        try:
            rows.append(_row(data, kind, line, path))
        except ValidationError as exc:
            errors += [d.in_file(where) for d in exc.details]
        except pydantic.ValidationError as exc:
            errors += [d.in_file(where) for d in pydantic_details(exc)]
    return rows


def read_rubric_file(path: str | Path) -> dict[str, RubricRow]:
    """Every rubric in ``path`` by question id (see the module docstring)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return {(meta := load_meta_rubric(path)).id: RubricRow("rubric", meta, 1)}
    if suffix == ".json":
        try:
            data = parse_json(read_text(path))
        except ValueError:
            data = None  # reading it as rows reports where it breaks
        if isinstance(data, dict) and "items" in data:
            return {(meta := load_meta_rubric(path)).id: RubricRow("rubric", meta, 1)}
    errors: list[ErrorDetail] = []
    rows = _rows(path, errors)
    by_id: dict[str, RubricRow] = {}
    for row in rows:
        if row.id in by_id:
            errors.append(
                ErrorDetail(
                    "meta_rubric.id",
                    "unique-id",
                    f"duplicate question id; line {by_id[row.id].line} has it",
                    row.id,
                ).in_file(f"{path}:{row.line}")
            )
        by_id.setdefault(row.id, row)
    if errors:
        raise ValidationError(errors)
    if not by_id:
        raise ValidationError([ErrorDetail("$", "not-empty", "holds no rubric").in_file(path)])
    return by_id


def row_image(row: RubricRow) -> Path | None:
    record = row.record
    if record is None or record.image is None or row.base is None:
        return None
    return (row.base / record.image).resolve()


def row_question(row: RubricRow, where: str) -> AcceptedQuestion:
    """The question as the row states it (no accepted question in the build folder)."""
    record, image = row.record, row_image(row)
    entity = record.entity if record is not None else row.meta.entity
    if not entity and (image is None or not image.is_file()):
        raise ValidationError(
            [
                ErrorDetail(
                    "entity",
                    "entity-or-image",
                    "the independent search needs the entity, or the "
                    "image to look at; give `entity` or an `image` that exists",
                    None,
                ).in_file(where)
            ]
        )
    sha = hashlib.sha256(image.read_bytes()).hexdigest() if image and image.is_file() else ""
    return AcceptedQuestion(
        id=row.id,
        image_id=row.id,
        image=str(image or ""),
        image_sha256=sha,
        question=record.question if record is not None else row.meta.question,
        candidate_id=row.id,
        entity=entity,
        domain=record.domain if record is not None else None,
        popularity=record.popularity if record is not None else None,
        provenance=Provenance(
            stage="input", model=None, prompt_version=None, inputs={}, key=content_hash(row.id)
        ),
    )
