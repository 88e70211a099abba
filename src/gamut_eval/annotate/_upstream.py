"""Upstream corrections that other fields derive from: the entity, the question, an item.

Each goes through ``_rubrics._change`` (compare-and-set on the page's version, an audit
event), with the derived fields re-derived or marked stale as ``_derived`` decides. What is
stale is read back from the audit trail (``stale_of``): the fields named stale by the edits
since the rubric's last import, less those a later edit re-derived. An import of the next
round's rows starts afresh, except that a row still lacking a field its export listed as
stale keeps the mark (``carried_stale``), so a refinement that does not recompute it cannot
clear it (nor can a re-review: its mark goes once ``metadata.build.review`` names
another review than the one the export saw).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from gamut_eval.annotate._derived import (
    STRANGER_TEST,
    TEXT_ONLY,
    Rederived,
    after_entity,
    after_items,
    after_question,
    names,
)
from gamut_eval.annotate._errors import FormError
from gamut_eval.annotate._models import Rubric, User, dumps
from gamut_eval.annotate._rubrics import (
    _change,
    _require_open,
    _text,
    checklist_of,
    events_of,
    get_rubric,
    meta_of,
)
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ValidationError
from gamut_eval.rubric import validate_meta_rubric

__all__ = ["carried_stale", "set_entity", "set_item", "set_question", "stale_of"]

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
