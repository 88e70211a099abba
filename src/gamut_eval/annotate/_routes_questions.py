"""Question rounds: the review queue, a question's page, reviews and adjudication."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from gamut_eval.annotate._errors import PermissionDenied
from gamut_eval.annotate._models import Decision, Image, Question, QuestionStatus, Review, User
from gamut_eval.annotate._questions import (
    ADJUDICATORS,
    adjudicate,
    adjudication_queue,
    get_question,
    next_for_review,
    reviews_of,
    submit_review,
)
from gamut_eval.annotate._rounds import REVIEWS_PER_QUESTION, Vote, after_reviews
from gamut_eval.annotate._web import DbSession, Viewer, Who, render, submitted

__all__ = ["router"]

router = APIRouter()

_DONE = {"review": "Your review was saved.", "ruling": "Your ruling was saved."}
"""Fixed messages picked by a query parameter: request text is never echoed into a page."""


@router.get("/review/next")
def review_next(
    request: Request,
    *,
    done: str = "",
    session: DbSession,
    who: Who,
) -> Response:
    """Go to the next question this user should review, or say there is none."""
    question = next_for_review(session, who.user)
    if question is None:
        return render(request, "nothing.html", {"message": _DONE.get(done, "")}, who=who)
    suffix = f"?done={done}" if done in _DONE else ""
    return RedirectResponse(f"/questions/{question.id}{suffix}", status_code=303)


@dataclass(frozen=True)
class _Access:
    """What the viewer may see and do on one question's page."""

    can_review: bool
    can_rule: bool
    show_reviews: bool


def _access(who: Viewer, question: Question, rows: list[tuple[Review, User]]) -> _Access:
    """Reviewers never see each other's decisions; adjudicators see them once the question
    left review, and rule only on questions they did not review themselves."""
    mine = any(u.id == who.user.id for _, u in rows)
    reviews = sum(r.kind == "review" for r, _ in rows)
    pending = question.status == QuestionStatus.PENDING.value
    judge = who.user.role in ADJUDICATORS and not mine
    return _Access(
        can_review=not mine and pending and reviews < REVIEWS_PER_QUESTION,
        can_rule=judge and question.status == QuestionStatus.ADJUDICATION.value,
        show_reviews=judge and not pending,
    )


def _page(
    request: Request,
    session: Session,
    who: Viewer,
    question_id: int,
    errors: list[str],
    status: int = 200,
) -> Response:
    question = get_question(session, question_id)
    rows = reviews_of(session, question)
    access = _access(who, question, rows)
    reviewed = [r for r, _ in rows if r.kind == "review"]
    revisions = [r.revised_text for r in reviewed if r.revised_text]
    context = {
        "question": question,
        "image": session.get(Image, question.image_id),
        "mine": next((r for r, u in rows if u.id == who.user.id), None),
        "can_review": access.can_review,
        "can_rule": access.can_rule,
        "rows": rows if access.show_reviews else [],
        "sides": sorted({r.decision for r in reviewed}) if access.can_rule else [],
        "reason": after_reviews(
            [Vote(Decision(r.decision), r.revised_text) for r in reviewed]
        ).reason,
        "draft": revisions[0] if revisions else question.text,
        "child": session.scalar(select(Question).where(Question.parent_id == question.id)),
        "parent": session.get(Question, question.parent_id) if question.parent_id else None,
        "errors": errors,
        "message": _DONE.get(request.query_params.get("done", ""), ""),
        "decisions": [d.value for d in Decision],
    }
    return render(request, "question.html", context, who=who, status=status)


@router.get("/questions/{question_id:int}")
def question_page(
    request: Request,
    question_id: int,
    *,
    session: DbSession,
    who: Who,
) -> Response:
    """A candidate question with its image and, when allowed, the review or ruling form."""
    return _page(request, session, who, question_id, [])


def _refused(
    request: Request, session: Session, who: Viewer, question_id: int
) -> Callable[[list[str]], Response]:
    """The question's page again, with the errors of the form it refused."""
    return lambda errors: _page(request, session, who, question_id, errors, status=422)


@router.post("/questions/{question_id:int}/review")
def review(
    request: Request,
    question_id: int,
    *,
    decision: Annotated[str, Form()] = "",
    revised_text: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """Submit an independent review, then go on to the next question."""
    return submitted(
        lambda: submit_review(session, question_id, who.user, decision, revised_text, comment),
        lambda _: "/review/next?done=review",
        _refused(request, session, who, question_id),
    )


@router.get("/adjudication")
def adjudication(request: Request, *, session: DbSession, who: Who) -> Response:
    """Questions whose reviewers disagree."""
    if who.user.role not in ADJUDICATORS:
        raise PermissionDenied("Only adjudicators and admins see the adjudication queue.")
    items = [(q, session.get(Image, q.image_id)) for q in adjudication_queue(session)]
    return render(request, "adjudication.html", {"items": items}, who=who)


@router.post("/questions/{question_id:int}/adjudicate")
def rule(
    request: Request,
    question_id: int,
    *,
    version: Annotated[int, Form()],
    decision: Annotated[str, Form()] = "",
    revised_text: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """An adjudicator's ruling, checked against the version the page showed."""
    return submitted(
        lambda: adjudicate(
            session, question_id, who.user, decision, revised_text, comment, version
        ),
        lambda _: f"/questions/{question_id}?done=ruling",
        _refused(request, session, who, question_id),
    )
