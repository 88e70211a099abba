"""``gamut annotate import``: candidate questions and rubrics from the build stages.

Every row of every file is validated first (``parse_file``; nothing is stored while
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
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from gamut_eval._files import read_jsonl
from gamut_eval.annotate._checklists import carry_edits
from gamut_eval.annotate._db import (
    Database,
    Image,
    Question,
    QuestionStatus,
    Rubric,
    RubricEvent,
    RubricStatus,
    dumps,
    utc_now,
)
from gamut_eval.annotate._questions import ImageStatus, image_status
from gamut_eval.annotate._rubrics import TEXT_ONLY, carried_stale, checklist_of, compiled_of
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
    now = utc_now()
    origin = {"source": "import", "file": str(source), "line": item.line, **(row.model_extra or {})}
    session.add(
        Question(
            candidate_id=row.candidate_id,
            image_id=image.id,
            round=_round_for(session, image.id),
            text=row.question,
            status=QuestionStatus.PENDING.value,
            origin=dumps(origin),
            version=1,
            created_at=now,
            updated_at=now,
        )
    )
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


def _store_rubric(
    session: Session, item: ParsedRubric, source: Path, summary: FileSummary, where: str
) -> None:
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
                _store_rubric(session, rubric, path, summary, f"{path}:{rubric.line}")
            summaries.append(summary)
    return summaries


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

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
"""The file suffixes accepted, with the media type an image is served as. Raster formats
only: an SVG can carry script, and anything else is not an image."""


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
