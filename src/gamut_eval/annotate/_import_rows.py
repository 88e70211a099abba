"""Rows of an import file: which kind each is, and its validation (nothing is stored here).

A row with ``meta_rubric`` is a rubric (a dataset record, as ``gamut build`` writes them
in ``dataset.jsonl``, optionally with a revised ``checklist``, and optionally naming its
``image_id`` and ``candidate_id`` at top level, in ``metadata`` or in ``metadata.build``);
a row with ``candidate_id`` is a candidate question (as ``gamut build review`` writes them
in ``review/to_annotate.jsonl``; extra fields such as ``origin`` or ``rank`` are kept). Every
problem of every row is collected, named by file, line, path, rule and value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from gamut_eval._files import read_jsonl
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import (
    Checklist,
    MetaRubric,
    compile_rubric,
    pydantic_details,
    validate_meta_rubric,
)

__all__ = [
    "IMAGE_SUFFIXES",
    "CandidateRow",
    "ParsedCandidate",
    "ParsedRubric",
    "file_sha256",
    "parse_file",
]


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in blocks (an image's address in the app)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_PLACEHOLDER = MetaRubric.model_validate(
    {
        "id": "x",
        "question": "?",
        "items": [{"id": "x", "type": "fact", "tier": "context", "statement": "x"}],
    }
)
"""Stands in for a broken meta-rubric while the rest of the row is validated, so one
problem does not hide the others (the meta-rubric's own errors are reported separately)."""

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
"""Raster formats only: an SVG can carry script, and anything else is not an image."""


class CandidateRow(BaseModel):
    """A candidate question from ``gamut build questions``; extra fields are kept as origin."""

    model_config = ConfigDict(extra="allow", frozen=True)

    candidate_id: Annotated[str, Field(min_length=1, max_length=512)]
    question: Annotated[str, Field(min_length=1)]
    image: str | None = None
    image_id: Annotated[str, Field(min_length=1, max_length=512)] | None = None
    entity: str | None = None
    domain: str | None = None
    popularity: Literal["head", "torso", "tail"] | None = None


@dataclass(frozen=True)
class ParsedCandidate:
    row: CandidateRow
    image_path: Path | None
    line: int


@dataclass(frozen=True)
class ParsedRubric:
    record: DatasetRecord
    checklist: Checklist
    image_path: Path | None
    image_key: str | None
    candidate_id: str | None
    line: int


def _image(value: str | None, base: Path, where: str, errors: list[ErrorDetail]) -> Path | None:
    if value is None:
        return None
    path = (base / value).resolve()
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        errors.append(
            ErrorDetail(
                "image", "image-type", f"must be one of {', '.join(sorted(IMAGE_SUFFIXES))}", value
            ).in_file(where)
        )
    elif not path.is_file():
        errors.append(
            ErrorDetail(
                "image", "image-exists", f"no such file relative to {base.resolve()}", value
            ).in_file(where)
        )
    else:
        return path
    return None


def _candidate(
    data: dict[str, Any], base: Path, where: str, line: int, errors: list[ErrorDetail]
) -> ParsedCandidate | None:
    try:
        row = CandidateRow.model_validate(data)
    except pydantic.ValidationError as exc:
        errors += [d.in_file(where) for d in pydantic_details(exc)]
        return None
    if row.image is None and row.image_id is None:
        errors.append(
            ErrorDetail(
                "image", "required", "a candidate needs `image` (a path) or `image_id`"
            ).in_file(where)
        )
        return None
    return ParsedCandidate(row, _image(row.image, base, where, errors), line)


def _id_mismatches(record_id: str, meta_id: str, checklist_id: str) -> list[ErrorDetail]:
    """The meta-rubric and the checklist must carry the record's own id."""
    found = {"meta_rubric.id": meta_id, "checklist.rubric_id": checklist_id}
    return [
        ErrorDetail(path, "id-match", f"must equal the record id {record_id!r}", value)
        for path, value in found.items()
        if value != record_id
    ]


def _links(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """``image_id`` and ``candidate_id`` of a rubric row, removed from ``data``: at top level,
    in ``metadata``, or (the candidate) in ``metadata.build`` where ``gamut build`` puts it."""
    found = data.get("metadata")
    meta_data: dict[str, Any] = found if isinstance(found, dict) else {}
    nested = meta_data.get("build")
    build: dict[str, Any] = nested if isinstance(nested, dict) else {}
    image_key = data.pop("image_id", None) or meta_data.get("image_id")
    candidate = (
        data.pop("candidate_id", None) or meta_data.get("candidate_id") or build.get("candidate_id")
    )
    return (str(image_key) if image_key else None, str(candidate) if candidate else None)


def _rubric(
    data: dict[str, Any], base: Path, where: str, line: int, errors: list[ErrorDetail]
) -> ParsedRubric | None:
    data = dict(data)
    image_key, candidate_id = _links(data)
    count = len(errors)
    try:
        meta = validate_meta_rubric(data["meta_rubric"], prefix="meta_rubric")
    except ValidationError as exc:
        errors += [d.in_file(where) for d in exc.details]
        meta = None
    try:
        record = DatasetRecord.model_validate({**data, "meta_rubric": meta or _PLACEHOLDER})
    except pydantic.ValidationError as exc:
        errors += [d.in_file(where) for d in pydantic_details(exc)]
        return None
    if meta is None:
        return None
    record = record.model_copy(update={"meta_rubric": meta})
    checklist = record.checklist or compile_rubric(meta)
    errors += [d.in_file(where) for d in _id_mismatches(record.id, meta.id, checklist.rubric_id)]
    path = _image(record.image, base, where, errors)
    if len(errors) > count:
        return None
    return ParsedRubric(record, checklist, path, image_key, candidate_id, line)


def _stage_record(data: dict[str, Any]) -> ErrorDetail:
    """A row of a build stage's own file (``draft/drafts.jsonl``, ``refine/refined.jsonl``):
    not a dataset record, so the app says which file to import instead."""
    stage = "refine/refined.jsonl" if "audit" in data else "draft/drafts.jsonl"
    return ErrorDetail(
        "question_id",
        "stage-record",
        f"this is a build stage record (as in {stage}), not a dataset record; import "
        "refine/rubrics.jsonl (which `gamut build refine` writes beside refined.jsonl) or "
        "the build's dataset.jsonl",
        data.get("question_id"),
    )


def parse_file(
    path: Path, errors: list[ErrorDetail]
) -> tuple[list[ParsedCandidate], list[ParsedRubric]]:
    candidates, rubrics = [], []
    first: dict[str, int] = {}
    for line, data in read_jsonl(path, errors):
        where = f"{path}:{line}"
        if isinstance(data, dict) and "question_id" in data and "id" not in data:
            errors.append(_stage_record(data).in_file(where))
        elif isinstance(data, dict) and "meta_rubric" in data:
            row = _rubric(data, path.parent, where, line, errors)
            if row is not None and row.record.id in first:
                errors.append(
                    ErrorDetail(
                        "id",
                        "unique-id",
                        f"duplicate question id; line {first[row.record.id]} has it",
                        row.record.id,
                    ).in_file(where)
                )
            elif row is not None:
                first[row.record.id] = line
                rubrics.append(row)
        elif isinstance(data, dict) and "candidate_id" in data:
            candidate = _candidate(data, path.parent, where, line, errors)
            if candidate is not None:
                candidates.append(candidate)
        else:
            found = sorted(data) if isinstance(data, dict) else data
            errors.append(
                ErrorDetail(
                    "$",
                    "row-kind",
                    "expected a candidate question (with `candidate_id` and `question`) or a "
                    "rubric (a dataset record with `meta_rubric`)",
                    found,
                ).in_file(where)
            )
    return candidates, rubrics
