"""The dashboard's numbers: status per image, work per annotator, agreement (Cohen's kappa).

Agreement is measured on the first two reviews of every question that has them, before
any adjudication: rater A is whoever reviewed first, rater B second (overall), and per pair
of annotators the pair's own labels. Only aggregates are shown, so the dashboard never
reveals a pending question's first decision to its second reviewer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval.analysis import accuracy, cohen_kappa, confusion_matrix
from gamut_eval.annotate._models import Decision, Image, Question, Review, Rubric, RubricEvent, User
from gamut_eval.annotate._rounds import ImageStatus, image_status

__all__ = [
    "PAGE_SIZE",
    "Agreement",
    "ImagePage",
    "ImageRow",
    "PairAgreement",
    "WorkRow",
    "agreement",
    "annotator_work",
    "image_page",
    "totals",
]

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
