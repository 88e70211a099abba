"""The files the app reads and writes: ``gamut annotate import`` (candidate questions and
rubrics from the build stages) and ``gamut annotate export`` (the versioned dataset, with
every decision's provenance).

Import. Every row of every file is validated first (``parse_file``; nothing is stored while
parsing), then everything is written in one transaction: a bad file changes nothing.
Re-importing a file is harmless (rows already present are skipped); a changed rubric for
a known question starts its next revision round (docs/method.md [B8]: LLM refinement,
then a second human round). A new candidate for an image that already has questions joins
the image's next round.

A row with ``meta_rubric`` is a rubric (a dataset record, as ``gamut build`` writes them
in ``dataset.jsonl``, optionally with a revised ``checklist``, and optionally naming its
``image_id`` and ``candidate_id`` at top level, in ``metadata`` or in ``metadata.build``);
a row with ``candidate_id`` is a candidate question (as ``gamut build review`` writes them
in ``review/to_annotate.jsonl``; extra fields such as ``origin`` or ``rank`` are kept). Every
problem of every row is collected, named by file, line, path, rule and value.

Export. Each export gets the next version number (stored in the database), written into every
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval import __version__
from gamut_eval._files import IMAGE_TYPES, atomic_writer, image_inside, read_jsonl
from gamut_eval._folder import file_sha256
from gamut_eval.annotate._checklists import carry_edits, diff_checklists
from gamut_eval.annotate._db import (
    Database,
    ExportRecord,
    Image,
    Question,
    Rubric,
    RubricEvent,
    RubricStatus,
    dumps,
    utc_now,
)
from gamut_eval.annotate._questions import (
    ImageStatus,
    image_status,
    new_question,
    origin_of,
    reviews_of,
)
from gamut_eval.annotate._rubrics import (
    STRANGER_TEST,
    TEXT_ONLY,
    carried_stale,
    checklist_of,
    compiled_of,
    events_of,
    meta_of,
    names,
    stale_of,
)
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, ValidationError, json_path
from gamut_eval.rubric import (
    Checklist,
    MetaRubric,
    compile_rubric,
    pydantic_details,
    validate_meta_rubric,
)


@dataclass
class FileSummary:
    """What one file contributed; ``describe()`` is what the command prints."""

    path: Path
    candidates_new: int = 0
    candidates_present: int = 0
    rubrics_new: int = 0
    rubrics_next_round: int = 0
    rubrics_unchanged: int = 0
    rubrics_dropped: int = 0
    images_new: int = 0
    edits_carried: int = 0
    edits_not_carried: int = 0
    images: set[str] = field(default_factory=set)

    def describe(self) -> str:
        parts = []
        candidates = self.candidates_new + self.candidates_present
        if candidates:
            parts.append(
                f"{candidates} candidate questions ({self.candidates_new} new, "
                f"{self.candidates_present} already present) for {len(self.images)} images"
            )
        rubrics = (
            self.rubrics_new
            + self.rubrics_next_round
            + self.rubrics_unchanged
            + self.rubrics_dropped
        )
        if rubrics:
            parts.append(
                f"{rubrics} rubrics ({self.rubrics_new} new, {self.rubrics_next_round} started "
                f"their next revision round, {self.rubrics_unchanged} unchanged, "
                f"{self.rubrics_dropped} skipped as dropped)"
            )
        if self.edits_carried or self.edits_not_carried:
            parts.append(
                f"{self.edits_carried} edits of the previous round carried over, "
                f"{self.edits_not_carried} not (the refinement changed those checks; see "
                "each rubric's audit trail)"
            )
        parts.append(f"{self.images_new} new images")
        return f"{self.path}: " + "; ".join(parts)


def _invalid(where: str, path: str, rule: str, message: str, value: Any) -> ValidationError:
    """A row refused while storing it (parsing collects its problems instead)."""
    return ValidationError([ErrorDetail(path, rule, message, value).in_file(where)])


def _find_image(
    session: Session, key: str | None, path: Path | None, summary: FileSummary, where: str
) -> Image:
    """The image named by ``key`` (an ``image_id``), else the one already imported from
    ``path``, else a new one: a file is registered once, whoever names it first."""
    if key is None and path is not None:
        image = session.scalar(select(Image).where(Image.path == str(path)))
        key = image.key if image is not None else str(path)
    image = session.scalar(select(Image).where(Image.key == key))
    if image is not None:
        if path is not None and Path(image.path) != path:
            raise _invalid(
                where,
                "image",
                "image-id-path",
                f"image_id {key!r} was imported with another file: {image.path}",
                str(path),
            )
        if image.sha256 is None and path is not None:
            image.sha256 = file_sha256(path)  # its file was missing when the hashes were added
        return image
    if path is None or key is None:
        raise _invalid(
            where,
            "image_id",
            "image-known",
            "no image with this id was imported; give `image` (a path) too",
            key,
        )
    image = Image(key=key, path=str(path), sha256=file_sha256(path), created_at=utc_now())
    session.add(image)
    session.flush()
    summary.images_new += 1
    return image


def _round_for(session: Session, image_id: int) -> int:
    """A new candidate joins its image's current round, or opens the next one when every
    earlier candidate was discarded (the image was flagged for new candidates)."""
    rows = session.execute(
        select(Question.round, Question.status).where(Question.image_id == image_id)
    ).all()
    if not rows:
        return 1
    last = max(r for r, _ in rows)
    flagged = image_status(s for _, s in rows) is ImageStatus.NEEDS_CANDIDATES
    return last + 1 if flagged else last


def _store_candidate(
    session: Session, item: ParsedCandidate, source: Path, summary: FileSummary
) -> None:
    row, where = item.row, f"{source}:{item.line}"
    image = _find_image(session, row.image_id, item.image_path, summary, where)
    image.entity = row.entity or image.entity
    image.domain = row.domain or image.domain
    image.popularity = row.popularity or image.popularity
    summary.images.add(image.key)
    present = session.scalar(select(Question).where(Question.candidate_id == row.candidate_id))
    if present is not None:
        if present.text != row.question:
            raise _invalid(
                where,
                "question",
                "candidate-unchanged",
                "this candidate_id was imported with another question; give a "
                "changed candidate a new id",
                row.candidate_id,
            )
        summary.candidates_present += 1
        return
    origin = {"source": "import", "file": str(source), "line": item.line, **(row.model_extra or {})}
    round_ = _round_for(session, image.id)
    session.add(new_question(row.candidate_id, image.id, round_, row.question, origin))
    session.flush()
    summary.candidates_new += 1


def _imported(item: ParsedRubric) -> dict[str, Any]:
    """The content a rubric import brings: compared with the last import to spot a new round.
    Stale marks the row's export listed for fields it still lacks are kept (``carried_stale``)."""
    content = {
        "meta_rubric": item.record.meta_rubric.model_dump(mode="json"),
        "checklist": item.checklist.model_dump(mode="json"),
        "entity": item.record.entity,
        "question": item.record.question,
        TEXT_ONLY: item.record.question_text_only,
    }
    stale = carried_stale(item.record)
    if stale:
        content["stale"] = stale
    return content


def _unchanged(last: Any, content: dict[str, Any]) -> bool:
    """The row brings what the last import brought (imports recorded before the text-only
    question was compared do not name it, and are compared without it)."""
    if not isinstance(last, dict):
        return False
    return last == {k: v for k, v in content.items() if k in last or k not in (TEXT_ONLY,)}


def _rubric_fields(
    session: Session, item: ParsedRubric, summary: FileSummary, where: str
) -> dict[str, Any]:
    record = item.record
    question = None
    if item.candidate_id:
        question = session.scalar(
            select(Question).where(Question.candidate_id == item.candidate_id)
        )
    image_id = question.image_id if question is not None else None
    if item.image_key or item.image_path:
        image_id = _find_image(session, item.image_key, item.image_path, summary, where).id
    return {
        "image_id": image_id,
        "question_id": question.id if question is not None else None,
        "question": record.question,
        "question_text_only": record.question_text_only,
        "entity": record.entity,
        "domain": record.domain,
        "popularity": record.popularity,
        "meta_rubric": dumps(record.meta_rubric.model_dump(mode="json")),
        "checklist": dumps(item.checklist.model_dump(mode="json")),
        "extra": dumps(record.metadata),
    }


def _last_import(session: Session, rubric: Rubric) -> Any:
    after = session.scalar(
        select(RubricEvent.after)
        .where(RubricEvent.rubric_id == rubric.id, RubricEvent.action == "import")
        .order_by(RubricEvent.id.desc())
        .limit(1)
    )
    return None if after is None else json.loads(after)


def _next_round(
    session: Session, rubric: Rubric, item: ParsedRubric, summary: FileSummary, where: str
) -> str:
    """Open the rubric's next round with the refined row; a row without its own checklist
    starts from the re-compiled one with the previous round's edits carried over."""
    old_base, edited = compiled_of(rubric), checklist_of(rubric)
    for key, value in _rubric_fields(session, item, summary, where).items():
        setattr(rubric, key, value)
    note = ""
    if item.record.checklist is None:
        carried = carry_edits(old_base, edited, item.checklist, item.record.meta_rubric)
        rubric.checklist = dumps(carried.checklist.model_dump(mode="json"))
        summary.edits_carried += carried.applied
        summary.edits_not_carried += len(carried.notes)
        note = f"; {carried.applied} edits of round {rubric.round} carried over"
        note += "".join(f"; not carried: {n}" for n in carried.notes)
    rubric.round += 1
    rubric.status = RubricStatus.OPEN.value
    rubric.version += 1
    summary.rubrics_next_round += 1
    return note


def _store_rubric(session: Session, item: ParsedRubric, source: Path, summary: FileSummary) -> None:
    where = f"{source}:{item.line}"
    rubric = session.scalar(select(Rubric).where(Rubric.record_id == item.record.id))
    content = _imported(item)
    before: dict[str, Any] | None = None
    note = ""
    if rubric is not None and rubric.status == RubricStatus.DROPPED.value:
        summary.rubrics_dropped += 1
        return
    if rubric is not None and _unchanged(_last_import(session, rubric), content):
        summary.rubrics_unchanged += 1
        return
    if rubric is not None:
        before = {
            "meta_rubric": json.loads(rubric.meta_rubric),
            "checklist": json.loads(rubric.checklist),
            "entity": rubric.entity,
            "question": rubric.question,
        }
        note = _next_round(session, rubric, item, summary, where)
    else:
        fields = _rubric_fields(session, item, summary, where)
        rubric = Rubric(
            record_id=item.record.id, round=1, status=RubricStatus.OPEN.value, version=1, **fields
        )
        session.add(rubric)
        summary.rubrics_new += 1
    rubric.updated_at = utc_now()
    session.flush()
    session.add(
        RubricEvent(
            rubric_id=rubric.id,
            user_id=None,
            actor=f"import:{source.name}",
            action="import",
            round=rubric.round,
            before=None if before is None else dumps(before),
            after=dumps(content),
            comment=f"{source.name}{note}",
            created_at=utc_now(),
        )
    )


def import_files(db: Database, paths: list[Path]) -> list[FileSummary]:
    """Validate every file, then import them all in one transaction; one summary per file."""
    errors: list[ErrorDetail] = []
    parsed = [(path, *parse_file(path, errors)) for path in paths]
    if errors:
        raise ValidationError(errors)
    summaries = []
    with db.write() as session, session.begin():
        for path, candidates, rubrics in parsed:
            summary = FileSummary(path)
            for candidate in candidates:
                _store_candidate(session, candidate, path, summary)
            for rubric in rubrics:
                _store_rubric(session, rubric, path, summary)
            summaries.append(summary)
    return summaries


_PLACEHOLDER = MetaRubric.model_validate(
    {
        "id": "x",
        "question": "?",
        "items": [{"id": "x", "type": "fact", "tier": "context", "statement": "x"}],
    }
)
"""Stands in for a broken meta-rubric while the rest of the row is validated, so one
problem does not hide the others (the meta-rubric's own errors are reported separately)."""


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
    if path.suffix.lower() not in IMAGE_TYPES:
        errors.append(
            ErrorDetail(
                "image", "image-type", f"must be one of {', '.join(sorted(IMAGE_TYPES))}", value
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


def _nul_at(data: Any) -> ErrorDetail | None:
    """The first field (or key) holding a NUL character: PostgreSQL cannot store one in
    text, so a row with one is refused on every database alike."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        at, value = stack.pop()
        if isinstance(value, dict):
            for key, item in reversed(value.items()):
                if "\x00" in str(key):
                    return _nul_detail(at, key)
                stack.append(((*at, str(key)), item))
        elif isinstance(value, list):
            stack += [((*at, index), item) for index, item in reversed(list(enumerate(value)))]
        elif isinstance(value, str) and "\x00" in value:
            return _nul_detail(at, value)
    return None


def _nul_detail(at: tuple[str | int, ...], value: str) -> ErrorDetail:
    return ErrorDetail(
        json_path(at),
        "nul-character",
        "holds a NUL character (\\u0000), which no text field may hold; remove it and import again",
        value,
    )


def parse_file(
    path: Path, errors: list[ErrorDetail]
) -> tuple[list[ParsedCandidate], list[ParsedRubric]]:
    candidates, rubrics = [], []
    first: dict[str, int] = {}
    for line, data in read_jsonl(path, errors):
        where = f"{path}:{line}"
        nul = _nul_at(data)
        if nul is not None:
            errors.append(nul.in_file(where))
        elif isinstance(data, dict) and "question_id" in data and "id" not in data:
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
    # the image's path is relative to the exported dataset's folder (brought into it)
    image = session.get(Image, rubric.image_id) if rubric.image_id is not None else None
    record = DatasetRecord.model_validate(
        {
            "id": rubric.record_id,
            "question": rubric.question,
            "question_text_only": text_only,
            "entity": rubric.entity,
            "image": None if image is None else image_inside(image.path, base),
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
