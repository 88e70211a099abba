"""What the rubric page shows: editor rows, the diff, the audit trail (plain data)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval.annotate._checklist_edit import parse_checklist_form
from gamut_eval.annotate._diff import diff_checklists
from gamut_eval.annotate._models import Image, Question, Rubric, RubricEvent
from gamut_eval.annotate._rubrics import checklist_of, compiled_of, events_of, meta_of
from gamut_eval.annotate._upstream import stale_of
from gamut_eval.rubric import CheckKind, Checklist, Tier

__all__ = ["NEW_ROWS", "rubric_context", "rubric_list"]

NEW_ROWS = 2
"""Blank "add a check" rows in the editor (the page needs no script to add rows)."""


def _rows_from(checklist: Checklist) -> list[dict[str, Any]]:
    return [
        {**c.model_dump(mode="json"), "remove": False, "base_text": c.text, "base_tier": c.tier}
        for c in checklist.checks
    ]


def _base(form: Mapping[str, str], stored: dict[str, Any], check_id: str) -> dict[str, str]:
    """The version of a check the submitted page showed (kept, so saving again still merges)."""
    for key, value in form.items():
        if value == check_id and key.startswith("check-") and key.endswith("-id"):
            prefix = key[: -len("id")]
            if f"{prefix}base-text" in form:
                return {
                    "base_text": form[f"{prefix}base-text"],
                    "base_tier": form.get(f"{prefix}base-tier", ""),
                }
    check = stored.get(check_id)
    return {
        "base_text": check.text if check else "",
        "base_tier": check.tier.value if check else "",
    }


def _rows_from_form(
    checklist: Checklist, form: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The submitted values, so a rejected save shows what the person typed, not the old text."""
    stored = checklist.by_id()
    parsed = parse_checklist_form(form)
    rows = []
    for row in parsed.rows:
        base = (
            stored[row.id].model_dump(mode="json")
            if row.id in stored
            else {"id": row.id, "kind": "", "item": "", "secondary": False, "cites": []}
        )
        rows.append(
            {
                **base,
                "text": row.text,
                "tier": row.tier,
                "remove": row.remove,
                **_base(form, stored, row.id),
            }
        )
    new = [
        {"id": n.id, "item": n.item, "kind": n.kind, "tier": n.tier, "text": n.text}
        for n in parsed.new
    ]
    return rows, new


def _blank() -> dict[str, str]:
    return {
        "id": "",
        "item": "",
        "kind": CheckKind.FACT.value,
        "tier": Tier.VALUABLE.value,
        "text": "",
    }


def _event_view(event: RubricEvent) -> dict[str, Any]:
    before = json.loads(event.before) if event.before else None
    after = json.loads(event.after) if event.after else None
    changes = None
    if event.action == "checklist" and before and after:
        changes = diff_checklists(Checklist.model_validate(before), Checklist.model_validate(after))
    return {
        "event": event,
        "changes": changes,
        "before": json.dumps(before, indent=2, ensure_ascii=False) if before is not None else "",
        "after": json.dumps(after, indent=2, ensure_ascii=False) if after is not None else "",
    }


def rubric_context(
    session: Session, rubric: Rubric, form: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Everything the rubric page renders; ``form`` re-fills the editor after a rejected save."""
    checklist = checklist_of(rubric)
    compiled = compiled_of(rubric)
    if form is None:
        rows, new = _rows_from(checklist), [_blank() for _ in range(NEW_ROWS)]
    else:
        rows, new = _rows_from_form(checklist, form)
    meta = meta_of(rubric)
    return {
        "rubric": rubric,
        "meta": meta,
        "image": session.get(Image, rubric.image_id) if rubric.image_id else None,
        "question": session.get(Question, rubric.question_id) if rubric.question_id else None,
        "rows": rows,
        "new_rows": new,
        "diff": diff_checklists(compiled, checklist),
        "counts": checklist.count_by_tier(),
        "events": [_event_view(e) for e in events_of(session, rubric)],
        "tiers": [t.value for t in Tier],
        "kinds": [k.value for k in CheckKind],
        "item_ids": [i.id for i in meta.items],
        "item_json": {
            i.id: json.dumps(i.model_dump(mode="json", exclude_none=True), indent=2)
            for i in meta.items
        },
        "stale": stale_of(session, rubric),
        "comment": (form or {}).get("comment", ""),
        "editor_version": _editor_version(rubric, form),
    }


def _editor_version(rubric: Rubric, form: Mapping[str, str] | None) -> int:
    """The version the editor's rows belong to: a refilled form keeps the one it was
    made at, so saving it again is merged instead of overwriting what changed since."""
    given = (form or {}).get("version", "")
    return int(given) if given.isdigit() and len(given) < 12 else rubric.version


def rubric_list(session: Session, status: str) -> list[dict[str, Any]]:
    """Rubrics with their check counts, edits and last change, for the list page."""
    query = select(Rubric).order_by(Rubric.id)
    if status != "all":
        query = query.where(Rubric.status == status)
    edits = dict(
        session.execute(
            select(RubricEvent.rubric_id, func.count(RubricEvent.id))
            .where(RubricEvent.user_id.is_not(None))
            .group_by(RubricEvent.rubric_id)
        ).all()
    )
    out = []
    for rubric in session.scalars(query):
        checklist = checklist_of(rubric)
        diff = diff_checklists(compiled_of(rubric), checklist)
        out.append(
            {
                "rubric": rubric,
                "checks": len(checklist.checks),
                "changed": len(diff.added) + len(diff.removed) + len(diff.changed),
                "edits": edits.get(rubric.id, 0),
            }
        )
    return out
