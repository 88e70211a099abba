"""``gamut build text-only --input FILE``: text-only questions for a file of dataset records.

Between human rounds the text-only question can go stale: people reworded the question, or
corrected the entity in a way the app could not carry into the text-only wording, and the
annotation app's export leaves it out and lists it in ``metadata.annotation.stale``. This
reads dataset records (the app's export, or ``refine/rubrics.jsonl``), rewrites the
text-only question of every row that lacks one, is marked stale, or does not name the
row's entity (the rest are kept as they are), and writes the rows to
``text-only/rubrics.jsonl`` for ``gamut annotate import``. Each question is the row's own
wording, entity and image (what people decided), as ``gamut build refine --input`` takes
them.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from gamut_eval.construct._models import StageReport
from gamut_eval.construct._prompts_questions import TEXT_ONLY_VERSION
from gamut_eval.construct._question_models import TextOnlyRecord
from gamut_eval.construct._rubric_files import RubricRow, read_rubric_file, row_question
from gamut_eval.construct._session import BuildSession
from gamut_eval.construct._text import names_entity
from gamut_eval.construct._text_only import text_only_unit
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, ValidationError

__all__ = ["run_text_only_input"]

_FIELD = "question_text_only"


def _stale_marks(record: DatasetRecord) -> dict[str, Any]:
    annotation = record.metadata.get("annotation")
    stale = annotation.get("stale") if isinstance(annotation, dict) else None
    return stale if isinstance(stale, dict) else {}


def needs_text_only(record: DatasetRecord) -> bool:
    """The row lacks a text-only question, has a stale one, or one not naming its entity."""
    text = record.question_text_only
    if text is None or _FIELD in _stale_marks(record):
        return True
    return bool(record.entity) and not names_entity(text, record.entity or "")


def _records(source: Path) -> list[tuple[RubricRow, DatasetRecord]]:
    rows = read_rubric_file(source)
    errors = [
        ErrorDetail(
            "$",
            "dataset-record",
            "text-only --input reads dataset records (the annotation app's export, "
            "refine/rubrics.jsonl, dataset.jsonl)",
            row.kind,
        ).in_file(f"{source}:{row.line}")
        for row in rows.values()
        if row.record is None
    ]
    errors += [
        ErrorDetail(
            "entity",
            "entity-required",
            "a text-only question names the entity in its text; give the row's `entity`",
            None,
        ).in_file(f"{source}:{row.line}")
        for row in rows.values()
        if row.record is not None and not row.record.entity and needs_text_only(row.record)
    ]
    if errors:
        raise ValidationError(errors)
    return [(row, row.record) for row in rows.values() if row.record is not None]


def _output_row(
    row: RubricRow, record: DatasetRecord, fresh: TextOnlyRecord | None, folder: Path
) -> DatasetRecord:
    """The row as given, its image relative to the output folder, with the fresh text-only
    question (and its stale mark gone) where one was written."""
    update: dict[str, Any] = {}
    if record.image is not None and row.base is not None:
        image = (row.base / record.image).resolve()
        update["image"] = os.path.relpath(image, folder.resolve())
    if fresh is not None:
        metadata = dict(record.metadata)
        annotation = metadata.get("annotation")
        if isinstance(annotation, dict) and _FIELD in _stale_marks(record):
            stale = {k: v for k, v in _stale_marks(record).items() if k != _FIELD}
            metadata["annotation"] = (
                {**annotation, "stale": stale}
                if stale
                else {k: v for k, v in annotation.items() if k != "stale"}
            )
        build = metadata.get("build")
        build = dict(build) if isinstance(build, dict) else {}
        metadata["build"] = {**build, "text_only": fresh.provenance.key}
        update.update({_FIELD: fresh.question_text_only, "metadata": metadata})
    return record.model_copy(update=update)


async def run_text_only_input(session: BuildSession, source: Path) -> StageReport:
    """Write ``text-only/rubrics.jsonl``: the rows of ``source`` with fresh text-only
    questions where they need one (see the module docstring)."""
    workdir = session.workdir
    pairs = _records(source)
    todo = [
        (row, row_question(row, f"{source}:{row.line}"))
        for row, record in pairs
        if needs_text_only(record)
    ]
    session.require_model("text-only")
    run = session.stage("text-only", TEXT_ONLY_VERSION)
    results = await asyncio.gather(*(text_only_unit(run, q) for _, q in todo))
    fresh = {q.id: r for (_, q), r in zip(todo, results, strict=True) if r is not None}
    out = workdir.file("text_only_rubrics")
    rows = [_output_row(row, record, fresh.get(row.id), out.parent) for row, record in pairs]
    path = workdir.write_path(out, rows, exclude_none=True)
    notes = (
        f"{len(pairs)} row(s): {len(fresh)} text-only question(s) written, "
        f"{len(pairs) - len(todo)} kept; import {path} into the annotation app",
    )
    return run.finish(units=len(todo), outputs={"rubrics": path}, notes=notes)
