"""Rubric revision in the database: checklist edits, upstream corrections, the audit trail.

Each change is one ``_change`` call: the page's version must still be current (else a
``ConflictError`` naming who saved in between), the row is updated with compare-and-set,
and an audit event records who, when, before and after (docs/reliability.md E18;
docs/method.md [B8]). A checklist saved from a stale page is first merged check by check
onto the stored one (``_merge``): only a check both people changed is a conflict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gamut_eval.annotate._checklist_edit import apply_form, parse_checklist_form
from gamut_eval.annotate._db import updated_rows, utc_now
from gamut_eval.annotate._errors import ConflictError, FormError, NotFound, PermissionDenied
from gamut_eval.annotate._merge import MergeConflict, merge_stale_form
from gamut_eval.annotate._models import Rubric, RubricEvent, RubricStatus, User, dumps
from gamut_eval.annotate._questions import ADJUDICATORS
from gamut_eval.rubric import Checklist, MetaRubric, compile_rubric

__all__ = [
    "checklist_of",
    "compiled_of",
    "events_of",
    "get_rubric",
    "meta_of",
    "save_checklist",
    "set_ambiguous",
    "set_complete",
    "set_dropped",
]

_MAX_TEXT = 2000


def get_rubric(session: Session, rubric_id: int) -> Rubric:
    """The rubric, or ``NotFound``."""
    rubric = session.get(Rubric, rubric_id)
    if rubric is None:
        raise NotFound(f"no rubric {rubric_id}")
    return rubric


def meta_of(rubric: Rubric) -> MetaRubric:
    """The meta-rubric scaffold (validated when imported)."""
    return MetaRubric.model_validate(json.loads(rubric.meta_rubric))


def checklist_of(rubric: Rubric) -> Checklist:
    """The checklist as revised so far."""
    return Checklist.model_validate(json.loads(rubric.checklist))


def compiled_of(rubric: Rubric) -> Checklist:
    """What the compiler makes of the meta-rubric: the baseline the diff is shown against."""
    return compile_rubric(meta_of(rubric), checklist_of(rubric).config)


def events_of(session: Session, rubric: Rubric) -> list[RubricEvent]:
    """The audit trail of a rubric, oldest first."""
    query = select(RubricEvent).where(RubricEvent.rubric_id == rubric.id)
    return list(session.scalars(query.order_by(RubricEvent.created_at, RubricEvent.id)))


def _changed_since(session: Session, rubric: Rubric, version: int) -> str:
    events = events_of(session, rubric)
    last = (
        f"{events[-1].actor} saved it ({events[-1].action}) at {events[-1].created_at}"
        if events
        else "it changed"
    )
    return (
        f"This rubric changed after you opened it: {last}, making it version "
        f"{rubric.version} (your page showed version {version})."
    )


def _conflict(session: Session, rubric: Rubric, version: int) -> ConflictError:
    return ConflictError(
        f"{_changed_since(session, rubric, version)} Your changes were NOT saved, so nothing "
        "of theirs was overwritten. Reload the page, then apply your changes again."
    )


def _merged(
    session: Session, rubric: Rubric, form: Mapping[str, str], version: int
) -> Mapping[str, str]:
    """The stale page's form merged onto the stored checklist, or ``MergeConflict``."""
    merged = merge_stale_form(
        form, checklist_of(rubric), rubric.version, events_of(session, rubric)
    )
    if merged is None:
        raise _conflict(session, rubric, version)
    form, conflicts = merged
    if conflicts:
        ids = ", ".join(c.id for c in conflicts)
        raise MergeConflict(
            f"{_changed_since(session, rubric, version)} Your changes were NOT saved: "
            f"{len(conflicts)} check(s) were changed by you and by someone else ({ids}). "
            "Both versions are shown below, and the editor holds the saved checklist with "
            "all your other edits: choose a version for each of those checks, then save again.",
            conflicts,
            dict(form),
        )
    return form


def _change(
    session: Session,
    rubric: Rubric,
    user: User,
    version: int,
    action: str,
    values: Mapping[str, Any],
    audit: tuple[Any, Any, str],
) -> None:
    """Compare-and-set ``values`` on ``rubric`` and append the audit event."""
    if rubric.version != version:
        raise _conflict(session, rubric, version)
    changed = updated_rows(
        session,
        update(Rubric)
        .where(Rubric.id == rubric.id, Rubric.version == version)
        .values(**values, version=version + 1, updated_at=utc_now()),
    )
    if changed != 1:
        session.refresh(rubric)
        raise _conflict(session, rubric, version)
    before, after, comment = audit
    session.add(
        RubricEvent(
            rubric_id=rubric.id,
            user_id=user.id,
            actor=user.name,
            action=action,
            round=rubric.round,
            before=dumps(before),
            after=dumps(after),
            comment=comment,
            created_at=utc_now(),
        )
    )
    session.flush()
    session.refresh(rubric)


def _require_open(rubric: Rubric) -> None:
    if rubric.status == RubricStatus.DROPPED.value:
        raise ConflictError(
            f"This question was dropped ({rubric.drop_reason}); restore it before editing."
        )
    if rubric.status == RubricStatus.DONE.value:
        raise ConflictError(
            f"Round {rubric.round} of this rubric is marked done; reopen it to edit."
        )


def _text(value: str, what: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise FormError([f"{what} must not be empty"])
    if len(text) > _MAX_TEXT:
        raise FormError([f"{what} is too long ({len(text)} characters; at most {_MAX_TEXT})"])
    return text


def save_checklist(
    session: Session, rubric_id: int, user: User, form: Mapping[str, str], version: int
) -> bool:
    """Apply the editor's form; False when it changed nothing (no event is recorded).

    A form from an older version is merged check by check (see ``_merge``)."""
    rubric = get_rubric(session, rubric_id)
    if rubric.version != version:
        form = _merged(session, rubric, form, version)
        version = rubric.version
    _require_open(rubric)
    parsed = parse_checklist_form(form)
    before = checklist_of(rubric)
    after = apply_form(before, meta_of(rubric), parsed)
    if after == before:
        return False
    before_json, after_json = before.model_dump(mode="json"), after.model_dump(mode="json")
    _change(
        session,
        rubric,
        user,
        version,
        "checklist",
        {"checklist": dumps(after_json)},
        (before_json, after_json, parsed.comment),
    )
    return True


def set_ambiguous(
    session: Session, rubric_id: int, user: User, note: str | None, version: int
) -> None:
    """Mark the question ambiguous (with a note saying why), or clear the mark (``None``)."""
    rubric = get_rubric(session, rubric_id)
    new = None if note is None else _text(note, "the note on what is ambiguous")
    audit = ({"ambiguous_note": rubric.ambiguous_note}, {"ambiguous_note": new}, "")
    _change(session, rubric, user, version, "ambiguous", {"ambiguous_note": new}, audit)


def set_dropped(
    session: Session, rubric_id: int, user: User, reason: str | None, version: int
) -> None:
    """Drop the question with a reason (no sound rubric), or restore it (``None``)."""
    if user.role not in ADJUDICATORS:
        raise PermissionDenied("Only adjudicators and admins may drop or restore a question.")
    rubric = get_rubric(session, rubric_id)
    if reason is None:
        values: dict[str, Any] = {"status": RubricStatus.OPEN.value, "drop_reason": None}
        action = "restore"
    else:
        values = {
            "status": RubricStatus.DROPPED.value,
            "drop_reason": _text(reason, "the reason for dropping"),
        }
        action = "drop"
    before = {"status": rubric.status, "drop_reason": rubric.drop_reason}
    _change(session, rubric, user, version, action, values, (before, values, ""))


def set_complete(session: Session, rubric_id: int, user: User, done: bool, version: int) -> None:
    """Close this round's human revision of the rubric, or reopen it."""
    rubric = get_rubric(session, rubric_id)
    if rubric.status == RubricStatus.DROPPED.value:
        raise ConflictError("This question was dropped; restore it first.")
    status = RubricStatus.DONE if done else RubricStatus.OPEN
    before = {"status": rubric.status}
    after = {"status": status.value}
    _change(
        session, rubric, user, version, "complete" if done else "reopen", after, (before, after, "")
    )
