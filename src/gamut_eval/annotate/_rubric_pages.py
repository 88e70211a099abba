"""Rubric revision's pages: the list, the editor, upstream corrections, and what the rubric
page shows (editor rows, the diff, the audit trail, as plain data).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval.annotate._checklists import (
    CheckConflict,
    MergeConflict,
    diff_checklists,
    parse_checklist_form,
)
from gamut_eval.annotate._db import Image, Question, Rubric, RubricEvent, User
from gamut_eval.annotate._errors import FormError
from gamut_eval.annotate._item_form import item_from_form, item_rows
from gamut_eval.annotate._rubrics import (
    checklist_of,
    compiled_of,
    events_of,
    get_rubric,
    meta_of,
    preview_item,
    save_checklist,
    set_ambiguous,
    set_complete,
    set_dropped,
    set_entity,
    set_item,
    set_question,
    stale_of,
)
from gamut_eval.annotate._web import DbSession, Fields, Viewer, Who, render, submitted
from gamut_eval.rubric import Check, CheckKind, Checklist, Tier

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


def _by_item(checks: Sequence[Check]) -> dict[str, list[Check]]:
    grouped: dict[str, list[Check]] = {}
    for check in checks:
        grouped.setdefault(check.item, []).append(check)
    return grouped


def rubric_queue(session: Session, rubric: Rubric) -> dict[str, Any]:
    """Where the rubric stands in the work: the open rubrics before and after it, how many
    of each round are done, and how many rubrics each reviewer has edited in its round."""
    rows = session.execute(select(Rubric.id, Rubric.status, Rubric.round).order_by(Rubric.id))
    rounds: dict[int, list[int]] = {}
    open_ids = []
    for rubric_id, status, number in rows:
        done_total = rounds.setdefault(number, [0, 0])
        done_total[0] += status != "open"
        done_total[1] += 1
        if status == "open":
            open_ids.append(rubric_id)
    reviewers = session.execute(
        select(User.name, func.count(func.distinct(RubricEvent.rubric_id)))
        .join(User, User.id == RubricEvent.user_id)
        .where(RubricEvent.round == rubric.round)
        .group_by(User.name)
        .order_by(User.name)
    ).all()
    return {
        "previous": max((i for i in open_ids if i < rubric.id), default=None),
        "next": min((i for i in open_ids if i > rubric.id), default=None),
        "open": len(open_ids),
        "position": open_ids.index(rubric.id) + 1 if rubric.id in open_ids else None,
        "rounds": sorted((number, done, total) for number, (done, total) in rounds.items()),
        "reviewers": [(name, edited) for name, edited in reviewers],
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
        "item_forms": [{"item": i, "rows": item_rows(i)} for i in meta.items],
        "evidence_ids": [e.id for e in meta.evidence],
        "compiled_by_item": _by_item(compiled.checks),
        "queue": rubric_queue(session, rubric),
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


router = APIRouter()

_DONE = {
    "saved": "The checklist was saved.",
    "unchanged": "Nothing had changed; nothing was saved.",
    "entity": "The entity was corrected; what is made from it was re-derived or marked stale.",
    "question": "The question was reworded; what is made from it was re-derived or marked stale.",
    "item": "The item was saved and the checklist re-compiled from the meta-rubric.",
    "ambiguous": "The ambiguity mark was updated.",
    "drop": "The question was dropped.",
    "restore": "The question was restored.",
    "complete": "This round is marked done for the rubric.",
    "reopen": "The rubric is open for revision again.",
}
"""Fixed messages picked by a query parameter: request text is never echoed into a page."""
_STATUSES = ("open", "done", "dropped", "all")


@router.get("/rubrics")
def rubrics(
    request: Request,
    *,
    status: str = "open",
    session: DbSession,
    who: Who,
) -> Response:
    """Rubrics to revise, filtered by status."""
    status = status if status in _STATUSES else "open"
    context = {"items": rubric_list(session, status), "status": status, "statuses": _STATUSES}
    return render(request, "rubrics.html", context, who=who)


@dataclass(frozen=True)
class _Rubric:
    """What every route of one rubric works with: the request, its session and viewer."""

    request: Request
    session: Session
    who: Viewer
    rubric_id: int

    def page(
        self,
        errors: list[str],
        form: dict[str, str] | None = None,
        conflicts: list[CheckConflict] | None = None,
    ) -> Response:
        """The rubric's page, with ``errors`` (422), the ``conflicts`` of a stale save
        (409), or the message of what was just done."""
        context = rubric_context(self.session, get_rubric(self.session, self.rubric_id), form)
        context["errors"] = errors
        context["conflicts"] = conflicts or []
        context["message"] = _DONE.get(self.request.query_params.get("done", ""), "")
        status = 409 if conflicts else 422 if errors else 200
        return render(self.request, "rubric.html", context, who=self.who, status=status)

    def done(self, what: str) -> str:
        """The page's address, saying ``what`` was done."""
        return f"/rubrics/{self.rubric_id}?done={what}"

    def act(self, what: str, change: Callable[[], object]) -> Response:
        """``change``, then back to the page saying ``what`` was done (or the page with the
        errors, if the form was refused)."""
        return submitted(change, lambda _: self.done(what), self.page)


def _rubric(request: Request, rubric_id: int, session: DbSession, who: Who) -> _Rubric:
    return _Rubric(request, session, who, rubric_id)


RubricPage = Annotated[_Rubric, Depends(_rubric, scope="function")]
"""A route parameter: the rubric of the path, with the request, session and viewer."""


@router.get("/rubrics/{rubric_id:row_id}")
def rubric_page(at: RubricPage) -> Response:
    """The meta-rubric scaffold beside the editable checklist, its diff and audit trail."""
    return at.page([])


def _version(form: dict[str, str]) -> int:
    try:
        return int(form.get("version", ""))
    except ValueError:
        raise FormError(["the form has no version number; reload the page"]) from None


@router.post("/rubrics/{rubric_id:row_id}/checklist")
def save(*, form: Fields, at: RubricPage) -> Response:
    """Save the edited checklist; from a stale page it is merged check by check, and a
    check changed on both sides shows both versions (409, nothing saved)."""
    try:
        return submitted(
            lambda: save_checklist(at.session, at.rubric_id, at.who.user, form, _version(form)),
            lambda changed: at.done("saved" if changed else "unchanged"),
            lambda errors: at.page(errors, form),
        )
    except MergeConflict as conflict:  # raised before anything was written
        return at.page([str(conflict)], conflict.form, conflict.conflicts)


@router.post("/rubrics/{rubric_id:row_id}/entity")
def entity(
    at: RubricPage,
    *,
    version: Annotated[int, Form()],
    entity: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
) -> Response:
    """Upstream correction: the ground-truth entity."""
    return at.act(
        "entity",
        lambda: set_entity(at.session, at.rubric_id, at.who.user, entity, comment, version),
    )


@router.post("/rubrics/{rubric_id:row_id}/question")
def question(
    at: RubricPage,
    *,
    version: Annotated[int, Form()],
    question: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
) -> Response:
    """Upstream correction: reword the question."""
    return submitted(
        lambda: set_question(at.session, at.rubric_id, at.who.user, question, comment, version),
        lambda changed: at.done("question" if changed else "unchanged"),
        at.page,
    )


def _item_json(form: Mapping[str, str]) -> str:
    """The edited item as JSON: given as such (``item``), or built from its form's fields."""
    if "item" in form:
        return form["item"]
    return json.dumps(item_from_form(form.get("item_id", ""), form), ensure_ascii=False)


@router.post("/rubrics/{rubric_id:row_id}/item")
def item(*, form: Fields, at: RubricPage) -> Response:
    """Edit one meta-rubric item (through its form, or as JSON in ``item``); the
    checklist is re-compiled from the items."""
    item_id, comment = form.get("item_id", ""), form.get("comment", "")
    return submitted(
        lambda: set_item(
            at.session, at.rubric_id, at.who.user, item_id, _item_json(form), comment,
            _version(form),
        ),
        lambda changed: at.done("item" if changed else "unchanged"),
        at.page,
    )  # fmt: skip


@router.post("/rubrics/{rubric_id:row_id}/item/preview")
def item_preview(*, form: Fields, at: RubricPage) -> Response:
    """The checks an item's form compiles to, as an HTML fragment beside the form (422
    with the problems when it would be refused); nothing is saved."""
    rubric = get_rubric(at.session, at.rubric_id)
    try:
        checks = preview_item(rubric, form.get("item_id", ""), _item_json(form))
    except FormError as exc:
        context: dict[str, Any] = {"checks": [], "problems": exc.messages}
        return render(at.request, "_item_preview.html", context, who=at.who, status=422)
    context = {"checks": checks, "problems": []}
    return render(at.request, "_item_preview.html", context, who=at.who)


@router.post("/rubrics/{rubric_id:row_id}/ambiguous")
def ambiguous(
    at: RubricPage,
    *,
    version: Annotated[int, Form()],
    note: Annotated[str, Form()] = "",
    clear: Annotated[str, Form()] = "",
) -> Response:
    """Mark the question ambiguous with a note, or clear the mark."""
    value = None if clear else note
    return at.act(
        "ambiguous", lambda: set_ambiguous(at.session, at.rubric_id, at.who.user, value, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/drop")
def drop(
    at: RubricPage, *, version: Annotated[int, Form()], reason: Annotated[str, Form()] = ""
) -> Response:
    """Drop the question with a reason (no sound rubric can be made)."""
    return at.act(
        "drop", lambda: set_dropped(at.session, at.rubric_id, at.who.user, reason, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/restore")
def restore(at: RubricPage, *, version: Annotated[int, Form()]) -> Response:
    """Undo a drop."""
    return at.act(
        "restore", lambda: set_dropped(at.session, at.rubric_id, at.who.user, None, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/complete")
def complete(at: RubricPage, *, version: Annotated[int, Form()]) -> Response:
    """Mark this round's revision of the rubric done."""
    return at.act(
        "complete", lambda: set_complete(at.session, at.rubric_id, at.who.user, True, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/reopen")
def reopen(at: RubricPage, *, version: Annotated[int, Form()]) -> Response:
    """Reopen a rubric marked done."""
    return at.act(
        "reopen", lambda: set_complete(at.session, at.rubric_id, at.who.user, False, version)
    )
