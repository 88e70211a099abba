"""What ``gamut build refine`` refines, and the rubrics it writes for the next human round.

The input is the build folder's drafts (the default), or any file of rubrics
(``_rubric_files``): drafts, refine's own output (``refine/refined.jsonl`` or
``refine/rubrics.jsonl``), a dataset, or the annotation app's export after a human round,
whose rows carry people's revised checklist. Each question is taken from the build folder's
accepted questions when it has them, else from the row itself (its question, entity and
image).

``refine/rubrics.jsonl`` holds one dataset record per refined rubric, which ``gamut
annotate import`` reads to open the next round. It carries no ``checklist``: the app
re-compiles the refined meta-rubric and re-applies the previous round's edits wherever the
refinement left that check as it was. People's revised checklist travels along in
``metadata.refine.revised_checklist``, and ``metadata.refine.people_edits`` lists each of
their edits and whether it still fits the refined rubric.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gamut_eval.construct._evidence import ACCEPTED_HINT
from gamut_eval.construct._question_models import AcceptedQuestion
from gamut_eval.construct._rubric_files import (
    RubricRow,
    read_rubric_file,
    row_image,
    row_question,
)
from gamut_eval.construct._rubric_models import DraftRecord, RefinedRecord
from gamut_eval.construct._workdir import Workdir
from gamut_eval.dataset import DatasetRecord
from gamut_eval.rubric import Checklist, MetaRubric, compile_rubric

__all__ = ["RefineUnit", "app_row", "refine_units"]


@dataclass(frozen=True)
class RefineUnit:
    """One question to refine."""

    question: AcceptedQuestion
    before: MetaRubric
    """The rubric refined."""
    revised: Checklist | None = None
    """People's revised checklist, when the row brings one that differs from the compiled."""
    row: RubricRow | None = None
    """The input row (``None``: the build folder's drafts)."""

    @property
    def compiled(self) -> Checklist:
        return compile_rubric(self.before)


def _revised(row: RubricRow) -> Checklist | None:
    if row.kind != "dataset" or row.checklist is None:
        return None
    return None if row.checklist == compile_rubric(row.meta) else row.checklist


def refine_units(workdir: Workdir, source: Path | None) -> list[RefineUnit | None]:
    """The questions to refine, in order (``None``: an accepted question with no draft)."""
    accepted = workdir.read_optional("accepted", AcceptedQuestion)
    if source is None:
        questions = workdir.read("accepted", AcceptedQuestion, missing_hint=ACCEPTED_HINT)
        drafts = {
            d.question_id: d
            for d in workdir.read(
                "drafts",
                DraftRecord,
                missing_hint="run `gamut build draft` first, or give --input FILE",
            )
        }
        return [
            RefineUnit(q, drafts[q.id].meta_rubric) if q.id in drafts else None for q in questions
        ]
    known = {q.id: q for q in accepted}
    rows = read_rubric_file(source)
    # A dataset row states its own question (with people's entity corrections, if any).
    return [
        RefineUnit(
            (known.get(row.id) if row.kind != "dataset" else None)
            or row_question(row, f"{source}:{row.line}"),
            row.meta,
            _revised(row),
            row,
        )
        for row in rows.values()
    ]


def _relative(image: str | Path | None, folder: Path) -> str | None:
    return None if not image else os.path.relpath(Path(image).resolve(), folder.resolve())


def _refine_meta(unit: RefineUnit, refined: RefinedRecord) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "rubric": refined.provenance.key,
        "model": refined.provenance.model,
        "prompt_version": refined.provenance.prompt_version,
        "input": unit.row.kind if unit.row is not None else "draft",
        "restored": [c.path for c in refined.restored],
        "dropped": [{"item": d.item, "reason": d.reason} for d in refined.dropped],
    }
    if unit.revised is not None:
        meta["revised_checklist"] = unit.revised.model_dump(mode="json")
        meta["people_edits"] = [e.model_dump(mode="json") for e in refined.people_edits]
    return meta


def app_row(unit: RefineUnit, refined: RefinedRecord, folder: Path) -> DatasetRecord:
    """The dataset record the annotation app imports for the next round (no checklist)."""
    question, record = unit.question, unit.row.record if unit.row is not None else None
    image = row_image(unit.row) if unit.row is not None and record is not None else None
    fields: dict[str, Any] = {
        "id": question.id,
        "question": question.question,
        "entity": question.entity,
        "domain": question.domain,
        "popularity": question.popularity,
        "image": _relative(image or question.image, folder),
        "metadata": {},
    }
    if question.provenance.stage != "input":  # an accepted question of the build folder
        fields["metadata"] = {"build": {"candidate_id": question.candidate_id}}
    if record is not None:
        fields.update(record.model_dump(exclude={"meta_rubric", "checklist", "image"}))
        fields["image"] = _relative(image, folder)
    fields["metadata"] = {**fields["metadata"], "refine": _refine_meta(unit, refined)}
    return DatasetRecord.model_validate(
        {**fields, "meta_rubric": refined.meta_rubric, "checklist": None}
    )
