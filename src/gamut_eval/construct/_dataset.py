"""Assembling ``dataset.jsonl``: accepted question + refined rubric + text-only version.

A question enters the dataset once its rubric is refined (the draft alone is not the
method's rubric). Image paths are written relative to the dataset file, as ``load_dataset``
expects; each record's ``metadata.build`` keeps the provenance keys of its parts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gamut_eval.construct._question_models import AcceptedQuestion, TextOnlyRecord
from gamut_eval.construct._rubric_models import RefinedRecord
from gamut_eval.construct._workdir import Workdir
from gamut_eval.dataset import DatasetRecord

__all__ = ["DatasetSummary", "assemble_dataset"]


@dataclass(frozen=True, slots=True)
class DatasetSummary:
    """What went into the dataset."""

    path: Path | None
    """``None`` when no question is complete yet (nothing written)."""
    records: int
    waiting_for_rubric: int
    without_text_only: int

    def summary(self) -> str:
        if self.path is None:
            return "no question has a refined rubric yet: dataset.jsonl not written"
        text = f"{self.records} question(s) in {self.path}"
        if self.waiting_for_rubric:
            text += f"; {self.waiting_for_rubric} accepted question(s) have no refined rubric yet"
        if self.without_text_only:
            text += f"; {self.without_text_only} without a text-only version"
        return text


def _dataset_record(
    question: AcceptedQuestion, refined: RefinedRecord, text_only: TextOnlyRecord | None, root: Path
) -> DatasetRecord:
    build = {
        "candidate_id": question.candidate_id,
        "review": question.provenance.key,
        "rubric": refined.provenance.key,
        "rubric_model": refined.provenance.model,
        "rubric_prompt_version": refined.provenance.prompt_version,
        "text_only": text_only.provenance.key if text_only else None,
    }
    return DatasetRecord(
        id=question.id,
        question=question.question,
        meta_rubric=refined.meta_rubric,
        entity=question.entity,
        image=os.path.relpath(question.image, root.resolve()),
        question_text_only=text_only.question_text_only if text_only else None,
        domain=question.domain,
        popularity=question.popularity,
        metadata={"build": build},
    )


def assemble_dataset(workdir: Workdir) -> DatasetSummary:
    """Write ``dataset.jsonl`` from the stage files (atomically); see the module docstring."""
    accepted = workdir.read_optional("accepted", AcceptedQuestion)
    refined = {r.question_id: r for r in workdir.read_optional("refined", RefinedRecord)}
    text_only = {t.question_id: t for t in workdir.read_optional("text_only", TextOnlyRecord)}
    records = [
        _dataset_record(q, refined[q.id], text_only.get(q.id), workdir.root)
        for q in accepted
        if q.id in refined
    ]
    if not records:
        return DatasetSummary(None, 0, len(accepted), 0)
    path = workdir.write_path(workdir.dataset, records, exclude_none=True)
    return DatasetSummary(
        path,
        len(records),
        waiting_for_rubric=len(accepted) - len(records),
        without_text_only=sum(1 for r in records if r.question_text_only is None),
    )
