"""The dashboard and the question rounds' pages: the review queue, a question's page, reviews
and adjudication.

The dashboard shows status per image, work per annotator and agreement (Cohen's kappa).
Agreement is measured on the first two reviews of every question that has them, before
any adjudication: rater A is whoever reviewed first, rater B second (overall), and per pair
of annotators the pair's own labels. Only aggregates are shown, so the dashboard never
reveals a pending question's first decision to its second reviewer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval.analysis import accuracy, cohen_kappa, confusion_matrix
from gamut_eval.annotate._db import (
    Decision,
    Image,
    Question,
    QuestionStatus,
    Review,
    Rubric,
    RubricEvent,
    User,
)
from gamut_eval.annotate._errors import PermissionDenied
from gamut_eval.annotate._questions import (
    ADJUDICATORS,
    REVIEWS_PER_QUESTION,
    ImageStatus,
    Vote,
    adjudicate,
    adjudication_queue,
    after_reviews,
    get_question,
    image_status,
    next_for_review,
    reviews_of,
    submit_review,
)
from gamut_eval.annotate._web import DbSession, Viewer, Who, render, submitted

LABELS = tuple(d.value for d in Decision)


@dataclass(frozen=True)
class ImageRow:
    """One image's questions by status, and the image's own status."""

    id: int
    key: str
    entity: str | None
    status: ImageStatus
    counts: dict[str, int]
    rounds: int


@dataclass(frozen=True)
class WorkRow:
    """What one person has done."""

    name: str
    role: str
    reviews: int
    adjudications: int
    rubric_edits: int


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of two annotators on the questions both reviewed."""

    a: str
    b: str
    n: int
    kappa: float | None


@dataclass(frozen=True)
class Agreement:
    """Agreement between first and second reviews over all doubly-reviewed questions."""

    n: int
    kappa: float | None
    observed: float | None
    matrix: list[list[int]]
    pairs: list[PairAgreement]


PAGE_SIZE = 50
"""Images per page of the dashboard."""


@dataclass(frozen=True)
class ImagePage:
    """One page of the image table: its rows, which page of how many, of how many images."""

    rows: list[ImageRow]
    page: int
    pages: int
    total: int
    first: int
    """1-based position of the page's first image (0 when there is none)."""


def image_page(
    session: Session, status: str | None = None, page: int = 1, size: int = PAGE_SIZE
) -> ImagePage:
    """Images in import order with their question counts by status, filtered by image
    status (None: all), ``size`` to a page. Counts come from one grouped query and only
    the page's image rows are loaded, so a large dataset renders as fast as a small one."""
    counts: dict[int, Counter[str]] = {}
    rounds: dict[int, int] = {}
    grouped = select(
        Question.image_id, Question.status, func.count(Question.id), func.max(Question.round)
    ).group_by(Question.image_id, Question.status)
    for image_id, question_status, n, last in session.execute(grouped):
        counts.setdefault(image_id, Counter())[question_status] = n
        rounds[image_id] = max(rounds.get(image_id, 0), last)
    statuses = {
        image_id: image_status(counts.get(image_id, Counter()).elements())
        for image_id in session.scalars(select(Image.id).order_by(Image.id))
    }
    ids = [i for i, st in statuses.items() if status is None or st.value == status]
    pages = max(1, -(-len(ids) // size))
    page = min(max(page, 1), pages)
    chosen = ids[(page - 1) * size : page * size]
    images = session.scalars(select(Image).where(Image.id.in_(chosen)).order_by(Image.id))
    rows = [
        ImageRow(
            id=image.id,
            key=image.key,
            entity=image.entity,
            status=statuses[image.id],
            counts=dict(counts.get(image.id, Counter())),
            rounds=rounds.get(image.id, 0),
        )
        for image in images
    ]
    first = (page - 1) * size + 1 if rows else 0
    return ImagePage(rows, page, pages, len(ids), first)


def annotator_work(session: Session) -> list[WorkRow]:
    """Reviews, adjudications and rubric edits per user, by name."""
    decisions = Counter(
        (user_id, kind) for user_id, kind in session.execute(select(Review.user_id, Review.kind))
    )
    edits = dict(
        session.execute(
            select(RubricEvent.user_id, func.count(RubricEvent.id))
            .where(RubricEvent.user_id.is_not(None))
            .group_by(RubricEvent.user_id)
        ).all()
    )
    return [
        WorkRow(
            u.name,
            u.role,
            decisions[(u.id, "review")],
            decisions[(u.id, "adjudication")],
            edits.get(u.id, 0),
        )
        for u in session.scalars(select(User).order_by(User.name))
    ]


def _first_two(session: Session) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """``((name, decision), (name, decision))`` of the first two reviews of each question."""
    rows = session.execute(
        select(Review.question_id, User.name, Review.decision)
        .join(User, User.id == Review.user_id)
        .where(Review.kind == "review")
        .order_by(Review.question_id, Review.created_at, Review.id)
    ).all()
    grouped: dict[int, list[tuple[str, str]]] = {}
    for question_id, name, decision in rows:
        grouped.setdefault(question_id, []).append((name, decision))
    return [(g[0], g[1]) for g in grouped.values() if len(g) >= 2]


def _kappa(a: list[str], b: list[str]) -> float | None:
    return cohen_kappa(a, b) if a else None


def agreement(session: Session) -> Agreement:
    """Cohen's kappa of first vs second reviews, overall and per pair of annotators."""
    pairs = _first_two(session)
    first = [p[0][1] for p in pairs]
    second = [p[1][1] for p in pairs]
    by_pair: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for (name_a, dec_a), (name_b, dec_b) in pairs:
        (x, dx), (y, dy) = sorted([(name_a, dec_a), (name_b, dec_b)])
        labels = by_pair.setdefault((x, y), ([], []))
        labels[0].append(dx)
        labels[1].append(dy)
    return Agreement(
        n=len(pairs),
        kappa=_kappa(first, second),
        observed=accuracy(first, second) if pairs else None,
        matrix=confusion_matrix(first, second, LABELS) if pairs else [[0] * 3 for _ in LABELS],
        pairs=[
            PairAgreement(a, b, len(la), _kappa(la, lb))
            for (a, b), (la, lb) in sorted(by_pair.items())
        ],
    )


def totals(session: Session) -> dict[str, Counter[str]]:
    """Questions by status and rubrics by status."""
    questions = select(Question.status, func.count()).group_by(Question.status)
    rubrics = select(Rubric.status, func.count()).group_by(Rubric.status)
    return {
        "questions": Counter(dict(session.execute(questions).all())),
        "rubrics": Counter(dict(session.execute(rubrics).all())),
    }


router = APIRouter()


@router.get("/")
def dashboard(
    request: Request,
    *,
    image_status: str = "all",
    page: str = "1",
    session: DbSession,
    who: Who,
) -> Response:
    """Where the work stands; images can be filtered by status, a page at a time."""
    statuses = [s.value for s in ImageStatus]
    if image_status not in statuses:
        image_status = "all"
    number = int(page) if page.isdigit() and len(page) < 9 else 1
    images = image_page(session, None if image_status == "all" else image_status, number)
    context = {
        "images": images,
        "image_status": image_status,
        "statuses": statuses,
        "work": annotator_work(session),
        "agreement": agreement(session),
        "totals": totals(session),
        "waiting": len(adjudication_queue(session)) if who.user.role in ADJUDICATORS else None,
    }
    return render(request, "dashboard.html", context, who=who)


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


@router.get("/questions/{question_id:row_id}")
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


@router.post("/questions/{question_id:row_id}/review")
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


@router.post("/questions/{question_id:row_id}/adjudicate")
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
