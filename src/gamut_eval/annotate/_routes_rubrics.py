"""Rubric revision: the list, the editor, and upstream corrections."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from gamut_eval.annotate._errors import FormError
from gamut_eval.annotate._merge import CheckConflict, MergeConflict
from gamut_eval.annotate._rubric_view import rubric_context, rubric_list
from gamut_eval.annotate._rubrics import (
    get_rubric,
    save_checklist,
    set_ambiguous,
    set_complete,
    set_dropped,
)
from gamut_eval.annotate._upstream import set_entity, set_item, set_question
from gamut_eval.annotate._web import DbSession, Fields, Viewer, Who, render, submitted

__all__ = ["router"]

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


Rubric = Annotated[_Rubric, Depends(_rubric, scope="function")]
"""A route parameter: the rubric of the path, with the request, session and viewer."""


@router.get("/rubrics/{rubric_id:int}")
def rubric_page(at: Rubric) -> Response:
    """The meta-rubric scaffold beside the editable checklist, its diff and audit trail."""
    return at.page([])


def _version(form: dict[str, str]) -> int:
    try:
        return int(form.get("version", ""))
    except ValueError:
        raise FormError(["the form has no version number; reload the page"]) from None


@router.post("/rubrics/{rubric_id:int}/checklist")
def save(*, form: Fields, at: Rubric) -> Response:
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


@router.post("/rubrics/{rubric_id:int}/entity")
def entity(
    at: Rubric,
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


@router.post("/rubrics/{rubric_id:int}/question")
def question(
    at: Rubric,
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


@router.post("/rubrics/{rubric_id:int}/item")
def item(
    at: Rubric,
    *,
    version: Annotated[int, Form()],
    item_id: Annotated[str, Form()] = "",
    item: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
) -> Response:
    """Edit one meta-rubric item (as JSON); the checklist is re-compiled from the items."""
    return submitted(
        lambda: set_item(at.session, at.rubric_id, at.who.user, item_id, item, comment, version),
        lambda changed: at.done("item" if changed else "unchanged"),
        at.page,
    )


@router.post("/rubrics/{rubric_id:int}/ambiguous")
def ambiguous(
    at: Rubric,
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


@router.post("/rubrics/{rubric_id:int}/drop")
def drop(
    at: Rubric, *, version: Annotated[int, Form()], reason: Annotated[str, Form()] = ""
) -> Response:
    """Drop the question with a reason (no sound rubric can be made)."""
    return at.act(
        "drop", lambda: set_dropped(at.session, at.rubric_id, at.who.user, reason, version)
    )


@router.post("/rubrics/{rubric_id:int}/restore")
def restore(at: Rubric, *, version: Annotated[int, Form()]) -> Response:
    """Undo a drop."""
    return at.act(
        "restore", lambda: set_dropped(at.session, at.rubric_id, at.who.user, None, version)
    )


@router.post("/rubrics/{rubric_id:int}/complete")
def complete(at: Rubric, *, version: Annotated[int, Form()]) -> Response:
    """Mark this round's revision of the rubric done."""
    return at.act(
        "complete", lambda: set_complete(at.session, at.rubric_id, at.who.user, True, version)
    )


@router.post("/rubrics/{rubric_id:int}/reopen")
def reopen(at: Rubric, *, version: Annotated[int, Form()]) -> Response:
    """Reopen a rubric marked done."""
    return at.act(
        "reopen", lambda: set_complete(at.session, at.rubric_id, at.who.user, False, version)
    )
