"""Rubric revision in the database: checklist edits, upstream corrections and the fields
derived from what they change, the audit trail.

Each change is one ``_change`` call: the page's version must still be current (else a
``ConflictError`` naming who saved in between), the row is updated with compare-and-set,
and an audit event records who, when, before and after (docs/reliability.md E18;
docs/method.md [B8]). A checklist saved from a stale page is first merged check by check
onto the stored one (``merge_stale_form``): only a check both people changed is a
conflict.

Upstream corrections change what other fields derive from: the entity, the question, an
item. Each goes through ``_change`` like any edit, with the derived fields re-derived or
marked stale as the rules below decide. What is stale is read back from the audit trail
(``stale_of``): the fields named stale by the edits since the rubric's last import, less
those a later edit re-derived. An import of the next round's rows starts afresh, except
that a row still lacking a field its export listed as stale keeps the mark
(``carried_stale``), so a refinement that does not recompute it cannot clear it (nor can
a re-review: its mark goes once ``metadata.build.review`` names another review than the
one the export saw).

What an upstream edit does to the derived fields (pure). A rubric carries fields made
from others: the text-only question (from the question and the entity), the compiled
checklist (from the meta-rubric's items), the meta-rubric's own copies of the question
and the entity, and the LLM review's stranger test (which judged the question knowing the
entity). When people correct the entity, reword the question or edit an item, each
derived field is either re-derived here, deterministically and without a model, or marked
**stale**: emptied where the export would otherwise hold it, and listed in the export's
``metadata.annotation.stale`` for the next build round (``gamut build text-only --input``
rewrites stale text-only questions):

- **entity**: ``meta_rubric.entity`` is set; the text-only question gets the new name where
  the old one occurs as whole words, else it is stale; the stranger test is stale. Checks
  that name the old entity are listed in the audit note (people decide; they are content).
  A question that names the corrected entity fails the stranger test, and the mark says so.
- **question**: ``meta_rubric.question`` is set; the text-only question and the stranger
  test are stale. A wording that names the entity is refused (the stranger test's plainest
  failure, decided without a model).
- **item**: the checklist is re-compiled from the items, people's check edits carried over
  (``carry_edits``); nothing becomes stale.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gamut_eval.annotate._checklists import (
    MergeConflict,
    apply_form,
    carry_edits,
    merge_stale_form,
    one_line,
    parse_checklist_form,
)
from gamut_eval.annotate._db import (
    Rubric,
    RubricEvent,
    RubricStatus,
    User,
    dumps,
    updated_rows,
    utc_now,
)
from gamut_eval.annotate._errors import ConflictError, FormError, NotFound, PermissionDenied
from gamut_eval.annotate._questions import ADJUDICATORS
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ValidationError
from gamut_eval.rubric import Check, Checklist, MetaRubric, compile_rubric, validate_meta_rubric

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
    text = one_line(value)
    if not text:
        raise FormError([f"{what} must not be empty"])
    if len(text) > _MAX_TEXT:
        raise FormError([f"{what} is too long ({len(text)} characters; at most {_MAX_TEXT})"])
    return text


def save_checklist(
    session: Session, rubric_id: int, user: User, form: Mapping[str, str], version: int
) -> bool:
    """Apply the editor's form; False when it changed nothing (no event is recorded).

    A form from an older version is merged check by check (see ``merge_stale_form``)."""
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


_JSON_COLUMNS = ("meta_rubric", "checklist")


def _columns(derived: Rederived) -> dict[str, Any]:
    """The edit's values as stored (the JSON documents as canonical text)."""
    return {k: dumps(v) if k in _JSON_COLUMNS else v for k, v in derived.values.items()}


def set_entity(
    session: Session, rubric_id: int, user: User, entity: str, comment: str, version: int
) -> Rederived:
    """Upstream correction: the ground-truth entity was wrong."""
    rubric = get_rubric(session, rubric_id)
    new = _text(entity, "the entity")
    derived = after_entity(
        old=rubric.entity,
        new=new,
        question=rubric.question,
        text_only=rubric.question_text_only,
        meta=json.loads(rubric.meta_rubric),
        checklist=checklist_of(rubric),
    )
    before = {"entity": rubric.entity, TEXT_ONLY: rubric.question_text_only}
    after = {"entity": new, TEXT_ONLY: derived.values.get(TEXT_ONLY), **derived.audit()}
    if TEXT_ONLY not in derived.values:
        del before[TEXT_ONLY], after[TEXT_ONLY]
    _change(session, rubric, user, version, "entity", _columns(derived), (before, after, comment))
    return derived


def set_question(
    session: Session, rubric_id: int, user: User, question: str, comment: str, version: int
) -> Rederived | None:
    """Upstream correction: reword the question (None when the wording is unchanged)."""
    rubric = get_rubric(session, rubric_id)
    _require_open(rubric)
    new = _text(question, "the question")
    if new == rubric.question:
        return None
    if rubric.entity and names(new, rubric.entity):
        raise FormError(
            [
                f"the question names the entity ({rubric.entity}), so it fails the stranger "
                "test: refer to it through what the photo shows"
            ]
        )
    derived = after_question(
        old=rubric.question,
        new=new,
        text_only=rubric.question_text_only,
        meta=json.loads(rubric.meta_rubric),
    )
    before = {"question": rubric.question, TEXT_ONLY: rubric.question_text_only}
    after = {"question": new, TEXT_ONLY: derived.values.get(TEXT_ONLY), **derived.audit()}
    _change(session, rubric, user, version, "question", _columns(derived), (before, after, comment))
    return derived


def _edited_meta(rubric: Rubric, item_id: str, text: str) -> Any:
    """The meta-rubric with item ``item_id`` replaced by the JSON ``text``, validated."""
    meta = json.loads(rubric.meta_rubric)
    ids = [item.get("id") for item in meta["items"]]
    if item_id not in ids:
        raise FormError([f"item {item_id!r} is not in this meta-rubric ({', '.join(ids)})"])
    try:
        item = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormError(
            [f"item {item_id}: not valid JSON ({exc.msg} at line {exc.lineno})"]
        ) from None
    if not isinstance(item, dict):
        raise FormError([f"item {item_id}: must be a JSON object"])
    if item.get("id") != item_id:
        raise FormError(
            [f"item {item_id}: its id must stay {item_id!r} (found {item.get('id')!r})"]
        )
    items = [item if i == item_id else old for i, old in zip(ids, meta["items"], strict=True)]
    try:
        return validate_meta_rubric({**meta, "items": items}, prefix="meta_rubric")
    except ValidationError as exc:
        raise FormError([d.render() for d in exc.details]) from None


def preview_item(rubric: Rubric, item_id: str, item_json: str) -> list[Check]:
    """The checks item ``item_id`` compiles to once replaced by the JSON ``item_json``
    (validated with the whole meta-rubric, as a save is); nothing is written."""
    meta = _edited_meta(rubric, item_id, item_json)
    compiled = compile_rubric(meta, checklist_of(rubric).config)
    return [check for check in compiled.checks if check.item == item_id]


def set_item(
    session: Session,
    rubric_id: int,
    user: User,
    item_id: str,
    item_json: str,
    comment: str,
    version: int,
) -> Rederived | None:
    """Edit one meta-rubric item (its JSON); the checklist is re-compiled with people's
    check edits carried over. None when the item is unchanged."""
    rubric = get_rubric(session, rubric_id)
    _require_open(rubric)
    old_meta = meta_of(rubric)
    new_meta = _edited_meta(rubric, item_id, item_json)
    if new_meta == old_meta:
        return None
    derived = after_items(old_meta=old_meta, new_meta=new_meta, checklist=checklist_of(rubric))
    old_item = next(i for i in old_meta.items if i.id == item_id)
    new_item = next(i for i in new_meta.items if i.id == item_id)
    before = {"item": old_item.model_dump(mode="json", exclude_none=True)}
    after = {"item": new_item.model_dump(mode="json", exclude_none=True), **derived.audit()}
    _change(session, rubric, user, version, "item", _columns(derived), (before, after, comment))
    return derived


def stale_of(session: Session, rubric: Rubric) -> dict[str, dict[str, Any]]:
    """The rubric's stale fields: field -> why, by whom and when it became stale."""
    stale: dict[str, dict[str, Any]] = {}
    for event in events_of(session, rubric):
        after = json.loads(event.after) if event.after else {}
        if not isinstance(after, dict):
            continue
        if event.action == "import":
            stale = {}
        for name in after.get("derived", {}):
            stale.pop(name, None)
        for name, reason in after.get("stale", {}).items():
            stale[name] = {"reason": reason, "by": event.actor, "at": event.created_at}
    return stale


def carried_stale(record: DatasetRecord) -> dict[str, str]:
    """The stale marks an imported row brings from the export it was made from, for the
    fields it still lacks (a refinement that recomputed the field clears its mark)."""
    annotation = record.metadata.get("annotation")
    marks = annotation.get("stale") if isinstance(annotation, dict) else None
    if not isinstance(marks, dict):
        return {}
    build = record.metadata.get("build")
    review = build.get("review") if isinstance(build, dict) else None
    out = {}
    for name, info in marks.items():
        if name == TEXT_ONLY and record.question_text_only is not None:
            continue
        if name == STRANGER_TEST and isinstance(info, dict) and info.get("review") != review:
            continue  # the build reviewed the question again
        reason = info.get("reason") if isinstance(info, dict) else None
        out[str(name)] = str(reason or "marked stale by the previous round")
    return out


TEXT_ONLY = "question_text_only"
"""The text-only question (the dataset field)."""
STRANGER_TEST = "stranger_test"
"""The LLM review's verdict that the question does not presuppose the entity."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Rederived:
    """The outcome of one edit: column values to set, what was re-derived (field -> how),
    what is stale (field -> why), and notes for the audit trail."""

    values: dict[str, Any]
    derived: dict[str, str] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def audit(self) -> dict[str, Any]:
        """What goes into the edit's audit event beside the edited value."""
        out: dict[str, Any] = {}
        if self.derived:
            out["derived"] = self.derived
        if self.stale:
            out["stale"] = self.stale
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _name_pattern(name: str) -> re.Pattern[str] | None:
    """The name as a run of whole words, case-insensitive, any spacing or punctuation between
    its words ("Eiffel  Tower", "eiffel-tower")."""
    words = _WORD.findall(unicodedata.normalize("NFKC", name))
    if not words:
        return None
    body = r"\W+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def rename_entity(text: str, old: str, new: str) -> str | None:
    """``text`` with every whole-word occurrence of ``old`` replaced by ``new``; ``None`` when
    ``old`` does not occur (the text cannot be fixed without rewriting it). A text that names
    ``new`` already is kept as it is ("Bibimbap" corrected to "Dolsot bibimbap")."""
    pattern = _name_pattern(old)
    if pattern is None:
        return None
    if names(text, new):
        return text
    renamed, count = pattern.subn(lambda _: new, text)
    return renamed if count else None


def names(text: str, name: str) -> bool:
    """True when ``text`` names ``name`` as a run of whole words."""
    pattern = _name_pattern(name)
    return pattern is not None and pattern.search(text) is not None


def checks_naming(checklist: Checklist, name: str) -> list[str]:
    """Ids of the checks whose text names ``name`` (people may want to revise them)."""
    pattern = _name_pattern(name)
    if pattern is None:
        return []
    return [c.id for c in checklist.checks if pattern.search(c.text)]


def after_entity(
    *,
    old: str | None,
    new: str,
    question: str,
    text_only: str | None,
    meta: dict[str, Any],
    checklist: Checklist,
) -> Rederived:
    """The entity was corrected from ``old`` to ``new``."""
    values: dict[str, Any] = {"entity": new, "meta_rubric": {**meta, "entity": new}}
    derived = {"meta_rubric.entity": "set to the corrected entity"}
    stale = {
        STRANGER_TEST: "the LLM review judged the question knowing the old entity "
        f"({old!r}); no command re-runs it on a rubric: check it by hand, or review the "
        "question again in a build whose manifest has the corrected entity"
    }
    notes: list[str] = []
    if names(question, new):
        stale[STRANGER_TEST] = (
            f"the question names the corrected entity ({new!r}), so it fails the stranger "
            "test: reword it to refer to the entity through what the photo shows"
        )
    if text_only is not None:
        renamed = rename_entity(text_only, old, new) if old else None
        if renamed is not None:
            values[TEXT_ONLY] = renamed
            derived[TEXT_ONLY] = f"{old!r} replaced by {new!r}"
        else:
            values[TEXT_ONLY] = None
            stale[TEXT_ONLY] = (
                f"it does not name the old entity ({old!r}) in a form that can be replaced, so "
                "it needs rewriting; until `gamut build text-only --input` rewrites it, the "
                "text-only setting asks the question followed by the corrected entity"
            )
    if old:
        named = [c for c in checks_naming(checklist, old) if c not in checks_naming(checklist, new)]
        if named:
            notes.append(f"checks naming the old entity {old!r}: {', '.join(named)}")
    return Rederived(values, derived, stale, tuple(notes))


def after_question(*, old: str, new: str, text_only: str | None, meta: dict[str, Any]) -> Rederived:
    """The question was reworded from ``old`` to ``new``."""
    values: dict[str, Any] = {"question": new, "meta_rubric": {**meta, "question": new}}
    stale = {
        STRANGER_TEST: "the LLM review judged the old wording; the new one has not been "
        "reviewed (import it as a candidate question, or check it by hand)"
    }
    if text_only is not None:
        values[TEXT_ONLY] = None
        stale[TEXT_ONLY] = (
            "it rewrote the old wording; until `gamut build text-only --input` rewrites it, "
            "the text-only setting asks the new question followed by the entity"
        )
    return Rederived(values, {"meta_rubric.question": "set to the new wording"}, stale)


def after_items(*, old_meta: MetaRubric, new_meta: MetaRubric, checklist: Checklist) -> Rederived:
    """The meta-rubric's items were edited: the checklist is re-compiled from them and the
    checks people edited keep their edits wherever the item edit left the check as it was."""
    config = checklist.config
    carried = carry_edits(
        compile_rubric(old_meta, config), checklist, compile_rubric(new_meta, config), new_meta
    )
    values = {
        "meta_rubric": new_meta.model_dump(mode="json"),
        "checklist": carried.checklist.model_dump(mode="json"),
    }
    how = f"re-compiled from the edited items; {carried.applied} edits carried over"
    return Rederived(values, {"checklist": how}, {}, carried.notes)
