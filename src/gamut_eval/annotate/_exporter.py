"""``gamut annotate export``: the versioned dataset, with every decision's provenance.

Each export gets the next version number (stored in the database), written into every
record's ``metadata.annotation.dataset_version`` and into a manifest beside the dataset
(``NAME.manifest.json``: version, time, counts, the dropped questions with their reasons,
images that need new candidates, the dataset's SHA-256). Every text is built before any
file is written, each file is written atomically, and the version is committed last.
Optionally the question rounds' final decisions go to a JSONL file of their own, one row
per decided candidate, in the format ``gamut build review`` reads. The files besides the
dataset are Pydantic models (``ExportManifest``, ``DecisionRow``).

A record's ``metadata.annotation`` says who decided what and when: the question's review
history (each round, each review, the adjudication), every rubric event with what it
changed, the upstream corrections, and the final diff against the compiled checklist.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval import __version__
from gamut_eval._files import atomic_writer, image_inside
from gamut_eval.annotate._checklists import diff_checklists
from gamut_eval.annotate._db import (
    Database,
    ExportRecord,
    Image,
    Question,
    Rubric,
    RubricEvent,
    RubricStatus,
    utc_now,
)
from gamut_eval.annotate._questions import ImageStatus, image_status, origin_of, reviews_of
from gamut_eval.annotate._rubrics import (
    STRANGER_TEST,
    TEXT_ONLY,
    checklist_of,
    compiled_of,
    events_of,
    meta_of,
    names,
    stale_of,
)
from gamut_eval.dataset import DatasetRecord
from gamut_eval.rubric import Checklist


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    path: Path
    manifest: Path
    version: int
    records: int
    dropped: int
    still_open: int
    needs_candidates: int
    decisions_path: Path | None
    decisions: int

    def describe(self) -> str:
        lines = [
            f"wrote {self.path}: dataset version {self.version}, {self.records} questions "
            f"({self.dropped} dropped, listed in {self.manifest.name})"
        ]
        if self.still_open:
            lines.append(f"note: {self.still_open} rubrics are not marked done in their round")
        if self.decisions_path is not None:
            lines.append(f"wrote {self.decisions_path}: {self.decisions} decided candidates")
        if self.needs_candidates:
            lines.append(f"{self.needs_candidates} images need new candidate questions")
        return "\n".join(lines)


def _image_path(session: Session, image_id: int | None, base: Path) -> str | None:
    """The image's path relative to the exported dataset's folder (brought into it)."""
    image = session.get(Image, image_id) if image_id is not None else None
    return None if image is None else image_inside(image.path, base)


def _stale(
    session: Session, rubric: Rubric, extra: dict[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """The text-only question to export (never a stale one) and the stale marks.

    Beside the marks the edits left, a text-only question that does not name the entity is
    never exported (a rubric corrected before corrections re-derived it may hold one)."""
    stale = stale_of(session, rubric)
    text_only = rubric.question_text_only
    if text_only is not None and rubric.entity and not names(text_only, rubric.entity):
        stale.setdefault(
            TEXT_ONLY,
            {"reason": f"it does not name the entity ({rubric.entity!r})", "by": None, "at": None},
        )
    if TEXT_ONLY in stale:
        text_only = None
    build = extra.get("build")
    if STRANGER_TEST in stale and isinstance(build, dict) and build.get("review"):
        stale[STRANGER_TEST] = {**stale[STRANGER_TEST], "review": build["review"]}
    return text_only, stale


def _record(session: Session, rubric: Rubric, base: Path, stamp: dict[str, Any]) -> dict[str, Any]:
    meta = meta_of(rubric)
    if rubric.entity != meta.entity or rubric.question != meta.question:
        meta = meta.model_copy(update={"entity": rubric.entity, "question": rubric.question})
    extra = json.loads(rubric.extra)
    text_only, stale = _stale(session, rubric, extra)
    annotation = {**stamp, **rubric_provenance(session, rubric)}
    if stale:
        annotation["stale"] = stale
    record = DatasetRecord.model_validate(
        {
            "id": rubric.record_id,
            "question": rubric.question,
            "question_text_only": text_only,
            "entity": rubric.entity,
            "image": _image_path(session, rubric.image_id, base),
            "domain": rubric.domain,
            "popularity": rubric.popularity,
            "meta_rubric": meta,
            "checklist": checklist_of(rubric),
            "metadata": {**extra, "annotation": annotation},
        }
    )
    return record.model_dump(mode="json", exclude_none=True)


def _image_statuses(session: Session) -> dict[int, ImageStatus]:
    statuses: dict[int, list[str]] = {}
    for image_id, status in session.execute(select(Question.image_id, Question.status)):
        statuses.setdefault(image_id, []).append(status)
    return {image_id: image_status(s) for image_id, s in statuses.items()}


_DECIDED: dict[str, Literal["accept", "revise", "discard"]] = {
    "accepted": "accept",
    "revised": "revise",
    "discarded": "discard",
}


def _decision_row(session: Session, question: Question, status: ImageStatus) -> DecisionRow:
    """A final decision in the row format ``gamut build review`` reads (its ``Decision``)."""
    decision = _DECIDED[question.status]
    rows = reviews_of(session, question)
    ruling = [(r, u) for r, u in rows if r.kind == "adjudication"]
    deciders = ruling or [(r, u) for r, u in rows if r.kind == "review"]
    last = deciders[-1][0]
    image = session.get(Image, question.image_id)
    return DecisionRow(
        candidate_id=question.candidate_id,
        decision=decision,
        revised_question=last.revised_text if decision == "revise" else None,
        annotator=", ".join(u.name for _, u in deciders),
        round=question.round,
        decided_at=last.created_at,
        comment="; ".join(r.comment for r, _ in deciders if r.comment) or None,
        metadata={
            "image_id": image.key if image else None,
            "image_status": status.value,
            **question_provenance(session, question),
        },
    )


def _decision_rows(session: Session) -> list[DecisionRow]:
    """One row per decided candidate (accepted, revised or discarded), oldest first."""
    statuses = _image_statuses(session)
    decided = select(Question).where(Question.status.in_(list(_DECIDED)))
    return [
        _decision_row(session, q, statuses[q.image_id])
        for q in session.scalars(decided.order_by(Question.id))
    ]


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _manifest(session: Session, version: int, at: str, count: int, sha: str) -> ExportManifest:
    dropped = session.scalars(select(Rubric).where(Rubric.status == RubricStatus.DROPPED.value))
    needs = [
        image_id
        for image_id, status in _image_statuses(session).items()
        if status is ImageStatus.NEEDS_CANDIDATES
    ]
    keys = [session.get(Image, i) for i in needs]
    return ExportManifest(
        dataset_version=version,
        exported_at=at,
        exporter=f"gamut-eval {__version__}",
        records=count,
        sha256=sha,
        dropped=tuple(DroppedQuestion(id=r.record_id, reason=r.drop_reason) for r in dropped),
        images_needing_candidates=tuple(k.key for k in keys if k is not None),
    )


def export_dataset(db: Database, out: Path, decisions_out: Path | None = None) -> ExportSummary:
    """Write the dataset (and optionally the question decisions); return what was written."""
    base = out.resolve().parent
    manifest_path = out.with_name(out.stem + ".manifest.json")
    with db.write() as session, session.begin():
        version = (session.scalar(select(func.max(ExportRecord.version))) or 0) + 1
        at = utc_now()
        stamp = {"dataset_version": version, "exported_at": at}
        rubrics = list(session.scalars(select(Rubric).order_by(Rubric.id)))
        kept = [r for r in rubrics if r.status != RubricStatus.DROPPED.value]
        dataset = _jsonl([_record(session, r, base, stamp) for r in kept])
        sha = hashlib.sha256(dataset.encode("utf-8")).hexdigest()
        manifest = _manifest(session, version, at, len(kept), sha)
        files = {out: dataset, manifest_path: manifest.model_dump_json(indent=2) + "\n"}
        decided = _decision_rows(session) if decisions_out is not None else []
        if decisions_out is not None:
            rows = [d.model_dump(mode="json", exclude_none=True) for d in decided]
            files[decisions_out] = _jsonl(rows)
        for path, text in files.items():  # once every text exists: a failure writes nothing
            with atomic_writer(path) as handle:
                handle.write(text)
        session.add(
            ExportRecord(
                version=version, path=str(out), records=len(kept), sha256=sha, created_at=at
            )
        )
    return ExportSummary(
        path=out,
        manifest=manifest_path,
        version=version,
        records=len(kept),
        dropped=len(rubrics) - len(kept),
        still_open=sum(r.status == RubricStatus.OPEN.value for r in kept),
        needs_candidates=len(manifest.images_needing_candidates),
        decisions_path=decisions_out,
        decisions=len(decided),
    )


def question_provenance(session: Session, question: Question) -> dict[str, Any]:
    """One question: its origin, round, status and every review and ruling on it."""
    return {
        "candidate_id": question.candidate_id,
        "round": question.round,
        "question": question.text,
        "status": question.status,
        "origin": origin_of(question),
        "reviews": [
            {
                "by": user.name,
                "kind": review.kind,
                "decision": review.decision,
                "revised_text": review.revised_text,
                "comment": review.comment,
                "at": review.created_at,
            }
            for review, user in reviews_of(session, question)
        ],
    }


def question_history(session: Session, question: Question) -> list[dict[str, Any]]:
    """The question and the earlier rounds it was revised from, first round first."""
    chain = [question]
    while chain[-1].parent_id is not None:
        parent = session.get(Question, chain[-1].parent_id)
        if parent is None:
            break
        chain.append(parent)
    return [question_provenance(session, q) for q in reversed(chain)]


def _event(event: RubricEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "at": event.created_at,
        "by": event.actor,
        "action": event.action,
        "round": event.round,
    }
    if event.comment:
        out["comment"] = event.comment
    before = json.loads(event.before) if event.before else None
    after = json.loads(event.after) if event.after else None
    if event.action == "checklist" and before and after:
        old, new = Checklist.model_validate(before), Checklist.model_validate(after)
        out["changes"] = diff_checklists(old, new).summary()
    elif event.action != "import":
        out["before"], out["after"] = before, after
    return out


def _corrections(events: list[RubricEvent]) -> list[dict[str, Any]]:
    return [
        {
            "field": "entity",
            "before": json.loads(e.before or "{}").get("entity"),
            "after": json.loads(e.after or "{}").get("entity"),
            "by": e.actor,
            "at": e.created_at,
            "comment": e.comment,
        }
        for e in events
        if e.action == "entity"
    ]


def _ambiguous(rubric: Rubric, events: list[RubricEvent]) -> dict[str, Any] | None:
    if rubric.ambiguous_note is None:
        return None
    marks = [e for e in events if e.action == "ambiguous"]
    last = marks[-1] if marks else None
    return {
        "note": rubric.ambiguous_note,
        "by": last.actor if last else None,
        "at": last.created_at if last else None,
    }


def rubric_provenance(session: Session, rubric: Rubric) -> dict[str, Any]:
    """Everything people decided about one question's rubric (and its question)."""
    events = events_of(session, rubric)
    out: dict[str, Any] = {
        "rubric": {
            "round": rubric.round,
            "status": rubric.status,
            "changes_vs_compiled": diff_checklists(
                compiled_of(rubric), checklist_of(rubric)
            ).summary(),
            "events": [_event(e) for e in events],
        },
        "corrections": _corrections(events),
        "ambiguous": _ambiguous(rubric, events),
    }
    if rubric.question_id is not None:
        question = session.get(Question, rubric.question_id)
        if question is not None:
            out["question_review"] = question_history(session, question)
    return out


_FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class DroppedQuestion(BaseModel):
    """A question left out of the dataset, and why."""

    model_config = _FROZEN

    id: str
    """The question (record) id."""
    reason: str | None
    """The reason the adjudicator or admin gave."""


class ExportManifest(BaseModel):
    """``NAME.manifest.json``: what one export contains."""

    model_config = _FROZEN

    dataset_version: int
    """This export's number (also in every record's ``metadata.annotation``)."""
    exported_at: str
    """When (ISO 8601, UTC)."""
    exporter: str
    """``gamut-eval`` and its version."""
    records: int
    """Questions in the dataset."""
    sha256: str
    """SHA-256 of the dataset file's bytes."""
    dropped: tuple[DroppedQuestion, ...]
    """Questions dropped during rubric revision."""
    images_needing_candidates: tuple[str, ...]
    """Image ids whose candidates were all discarded."""


class DecisionRow(BaseModel):
    """A final decision on a candidate, in the row format ``gamut build review --decisions``
    reads (``gamut_eval.construct.Decision``)."""

    model_config = _FROZEN

    candidate_id: str
    """The candidate question."""
    decision: Literal["accept", "revise", "discard"]
    """What people decided."""
    revised_question: str | None = None
    """The revised wording, for ``revise`` only (it re-enters the next round)."""
    annotator: str
    """Who decided: both reviewers when they agreed, else the adjudicator."""
    round: int
    """The review round the candidate was in."""
    decided_at: str
    """When the deciding review or ruling was saved (ISO 8601, UTC)."""
    comment: str | None = None
    """The deciders' comments."""
    metadata: dict[str, Any]
    """The image, its status, and the candidate's origin and every review and ruling."""
