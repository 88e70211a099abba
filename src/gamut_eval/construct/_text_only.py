"""The ``text-only`` stage: each question with the entity named in text (docs/method.md
[B10]), over the build folder or over a file of dataset records.

The rewrite must name the entity and ask the same thing; code checks the first, a second
call (a checker with its own prompt) the second. A failed check is fed back like a
validation error, for a bounded number of repairs. The stage ends by assembling
``dataset.jsonl`` from the accepted questions, refined rubrics and text-only versions.

``gamut build text-only --input FILE`` (``run_text_only_input``): between human rounds the
text-only question can go stale: people reworded the question, or corrected the entity in a
way the app could not carry into the text-only wording, and the annotation app's export
leaves it out and lists it in ``metadata.annotation.stale``. This reads dataset records (the
app's export, or ``refine/rubrics.jsonl``), rewrites the text-only question of every row
that lacks one, is marked stale, or does not name the row's entity (the rest are kept as
they are), and writes the rows to ``text-only/rubrics.jsonl`` for ``gamut annotate import``.
Each question is the row's own wording, entity and image (what people decided), as ``gamut
build refine --input`` takes them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gamut_eval._files import image_inside
from gamut_eval.construct._evidence import ACCEPTED_HINT, question_inputs
from gamut_eval.construct._llm import Prompt, object_schema
from gamut_eval.construct._models import AcceptedQuestion, Invalid, StageReport, TextOnlyRecord
from gamut_eval.construct._prompts import (
    SAME_QUESTION_SYSTEM,
    TEXT_ONLY_SYSTEM,
    TEXT_ONLY_VERSION,
    same_question_user,
    text_only_user,
)
from gamut_eval.construct._questions import MAX_QUESTION_CHARS
from gamut_eval.construct._rubrics import RubricRow, read_rubric_file, row_question
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._text import names_entity, normalise
from gamut_eval.construct._workdir import assemble_dataset
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, ValidationError

_REWRITE_SCHEMA = object_schema({"question_text_only": {"type": "string"}})
_SAME_SCHEMA = object_schema({"same": {"type": "boolean"}, "reason": {"type": "string"}})


async def _same(data: Any) -> tuple[bool, str]:
    same, reason = data.get("same"), data.get("reason")
    if not isinstance(same, bool) or not isinstance(reason, str) or not reason.strip():
        raise Invalid(['reply {"same": true or false, "reason": "<one sentence>"}'])
    return same, reason.strip()


def _validator(
    call: UnitCall, question: AcceptedQuestion, entity: str
) -> Callable[[Any], Awaitable[tuple[str, str]]]:
    async def validate(data: Any) -> tuple[str, str]:
        text = data.get("question_text_only")
        if not isinstance(text, str) or not text.strip():
            raise Invalid(["`question_text_only` must be a non-empty string"])
        text = text.strip()
        errors = []
        if not names_entity(text, entity):
            errors.append(f"the question must name the entity ({entity!r}) in its text")
        if len(text) > MAX_QUESTION_CHARS + len(entity):
            errors.append("the question is much longer than the original; keep it as concise")
        if normalise(text) == normalise(question.question):
            errors.append("the question is unchanged; name the entity instead of the photo")
        if errors:
            raise Invalid(errors)
        check = Prompt(SAME_QUESTION_SYSTEM, same_question_user(question.question, text, entity))
        (same, reason), _ = await call.ask(check, _same, _SAME_SCHEMA)
        if not same:
            raise Invalid(
                [f"a check found that it does not ask the same thing as the original: {reason}"]
            )
        return text, reason

    return validate


async def text_only_unit(run: StageRun, question: AcceptedQuestion) -> TextOnlyRecord | None:
    """One question's text-only version (None when it failed; the failure is recorded)."""
    entity = question.entity
    if not entity:
        run.fail(question.id, "no-entity", "no ground-truth entity (give it in the manifest)")
        return None

    async def work(call: UnitCall) -> TextOnlyRecord:
        prompt = Prompt(TEXT_ONLY_SYSTEM, text_only_user(question.question, entity))
        (text, reason), repairs = await call.ask(
            prompt, _validator(call, question, entity), _REWRITE_SCHEMA
        )
        return TextOnlyRecord(
            question_id=question.id,
            question=question.question,
            question_text_only=text,
            entity=entity,
            check=reason,
            repairs=repairs,
            provenance=call.provenance(),
        )

    return await run.unit(question.id, question_inputs(question), work, TextOnlyRecord)


async def run_text_only(session: BuildSession) -> StageReport:
    """Write ``text-only/text_only.jsonl``, then assemble ``dataset.jsonl``."""
    workdir = session.workdir
    questions = workdir.read("accepted", AcceptedQuestion, missing_hint=ACCEPTED_HINT)
    run = session.stage("text-only", TEXT_ONLY_VERSION)
    results = await asyncio.gather(*(text_only_unit(run, q) for q in questions))
    records = [r for r in results if r is not None]
    path = workdir.write("text_only", records)
    dataset = assemble_dataset(workdir)
    outputs = {"text_only": path}
    if dataset.path is not None:
        outputs["dataset"] = dataset.path
    notes = (f"{len(records)} text-only question(s)", dataset.summary())
    return run.finish(units=len(questions), outputs=outputs, notes=notes)


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
    pairs: list[tuple[RubricRow, DatasetRecord]] = []
    errors: list[ErrorDetail] = []
    for row in read_rubric_file(source).values():
        where = f"{source}:{row.line}"
        if row.record is None:
            message = (
                "the text-only stage's source holds dataset records (the annotation app's "
                "export, refine/rubrics.jsonl, dataset.jsonl)"
            )
            errors.append(ErrorDetail("$", "dataset-record", message, row.kind).in_file(where))
        elif not row.record.entity and needs_text_only(row.record):
            message = "a text-only question names the entity in its text; give the row's `entity`"
            errors.append(ErrorDetail("entity", "entity-required", message, None).in_file(where))
        else:
            pairs.append((row, row.record))
    if errors:
        wrong_file = any(e.rule == "dataset-record" for e in errors)
        raise ValidationError(errors, setting="source" if wrong_file else None)
    return pairs


def _output_row(
    row: RubricRow, record: DatasetRecord, fresh: TextOnlyRecord | None, folder: Path
) -> DatasetRecord:
    """The row as given, its image relative to the output folder, with the fresh text-only
    question (and its stale mark gone) where one was written."""
    update: dict[str, Any] = {}
    if record.image is not None and row.base is not None:
        update["image"] = image_inside(row.base / record.image, folder)
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
