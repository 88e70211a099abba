"""Rubric revision: the list, the editor, and upstream corrections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from gamut_eval.annotate._errors import FormError
from gamut_eval.annotate._rubric_view import rubric_context, rubric_list
from gamut_eval.annotate._rubrics import (
    get_rubric,
    save_checklist,
    set_ambiguous,
    set_complete,
    set_dropped,
    set_entity,
)
from gamut_eval.annotate._web import DbSession, Fields, Viewer, Who, render

__all__ = ["router"]

router = APIRouter()

_DONE = {
    "saved": "The checklist was saved.",
    "unchanged": "Nothing had changed; nothing was saved.",
    "entity": "The entity was corrected.",
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


def _page(
    request: Request,
    session: Session,
    who: Viewer,
    rubric_id: int,
    errors: list[str],
    form: dict[str, str] | None = None,
) -> Response:
    context = rubric_context(session, get_rubric(session, rubric_id), form)
    context["errors"] = errors
    context["message"] = _DONE.get(request.query_params.get("done", ""), "")
    return render(request, "rubric.html", context, who=who, status=422 if errors else 200)


@router.get("/rubrics/{rubric_id:int}")
def rubric_page(
    request: Request,
    rubric_id: int,
    *,
    session: DbSession,
    who: Who,
) -> Response:
    """The meta-rubric scaffold beside the editable checklist, its diff and audit trail."""
    return _page(request, session, who, rubric_id, [])


def _version(form: dict[str, str]) -> int:
    try:
        return int(form.get("version", ""))
    except ValueError:
        raise FormError(["the form has no version number; reload the page"]) from None


def _done(rubric_id: int, what: str) -> Response:
    return RedirectResponse(f"/rubrics/{rubric_id}?done={what}", status_code=303)


@router.post("/rubrics/{rubric_id:int}/checklist")
def save(
    request: Request,
    rubric_id: int,
    *,
    form: Fields,
    session: DbSession,
    who: Who,
) -> Response:
    """Save the edited checklist (compare-and-set on the page's version)."""
    try:
        changed = save_checklist(session, rubric_id, who.user, form, _version(form))
    except FormError as exc:
        return _page(request, session, who, rubric_id, exc.messages, form)
    return _done(rubric_id, "saved" if changed else "unchanged")


def _act(
    request: Request,
    session: Session,
    who: Viewer,
    rubric_id: int,
    what: str,
    action: Callable[[], None],
) -> Response:
    try:
        action()
    except FormError as exc:
        return _page(request, session, who, rubric_id, exc.messages)
    return _done(rubric_id, what)


@router.post("/rubrics/{rubric_id:int}/entity")
def entity(
    request: Request,
    rubric_id: int,
    *,
    version: Annotated[int, Form()],
    entity: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """Upstream correction: the ground-truth entity."""
    return _act(
        request,
        session,
        who,
        rubric_id,
        "entity",
        lambda: set_entity(session, rubric_id, who.user, entity, comment, version),
    )


@router.post("/rubrics/{rubric_id:int}/ambiguous")
def ambiguous(
    request: Request,
    rubric_id: int,
    *,
    version: Annotated[int, Form()],
    note: Annotated[str, Form()] = "",
    clear: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """Mark the question ambiguous with a note, or clear the mark."""
    value = None if clear else note
    return _act(
        request,
        session,
        who,
        rubric_id,
        "ambiguous",
        lambda: set_ambiguous(session, rubric_id, who.user, value, version),
    )


@router.post("/rubrics/{rubric_id:int}/drop")
def drop(
    request: Request,
    rubric_id: int,
    *,
    version: Annotated[int, Form()],
    reason: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """Drop the question with a reason (no sound rubric can be made)."""
    return _act(
        request,
        session,
        who,
        rubric_id,
        "drop",
        lambda: set_dropped(session, rubric_id, who.user, reason, version),
    )


@router.post("/rubrics/{rubric_id:int}/restore")
def restore(
    request: Request,
    rubric_id: int,
    *,
    version: Annotated[int, Form()],
    session: DbSession,
    who: Who,
) -> Response:
    """Undo a drop."""
    return _act(
        request,
        session,
        who,
        rubric_id,
        "restore",
        lambda: set_dropped(session, rubric_id, who.user, None, version),
    )


@router.post("/rubrics/{rubric_id:int}/complete")
def complete(
    request: Request,
    rubric_id: int,
    *,
    version: Annotated[int, Form()],
    session: DbSession,
    who: Who,
) -> Response:
    """Mark this round's revision of the rubric done."""
    return _act(
        request,
        session,
        who,
        rubric_id,
        "complete",
        lambda: set_complete(session, rubric_id, who.user, True, version),
    )


@router.post("/rubrics/{rubric_id:int}/reopen")
def reopen(
    request: Request,
    rubric_id: int,
    *,
    version: Annotated[int, Form()],
    session: DbSession,
    who: Who,
) -> Response:
    """Reopen a rubric marked done."""
    return _act(
        request,
        session,
        who,
        rubric_id,
        "reopen",
        lambda: set_complete(session, rubric_id, who.user, False, version),
    )
