"""Question rounds (docs/method.md [B3]): the state machine, and reviews, adjudication and
re-entry of revisions in the database.

    pending --2 reviews agree: accept--> accepted          (accepted by two: advances)
    pending --2 reviews agree: discard--> discarded
    pending --2 reviews agree: revise, same text--> revised (the text re-enters next round)
    pending --reviews differ (or two different revisions)--> adjudication
    adjudication --ruling sides with one reviewer--> accepted | revised | discarded

The adjudicator breaks a tie by siding with one reviewer; it cannot add a third option,
so an accepted question has always been accepted by two people (a reviewer and the
adjudicator, or both reviewers), as the paper requires. An image whose questions are all
discarded (revised ones are superseded by their next-round version) needs new candidates.
The rules themselves (``make_vote``, ``after_reviews``, ``after_adjudication``,
``image_status``) are pure functions.

Every change to a question goes through ``_compare_and_set``: an UPDATE that only matches
the version read in the same transaction. Two people submitting at the same moment can
therefore never both move the same question; the loser gets a ``ConflictError`` and
nothing of theirs is saved (docs/reliability.md E18).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gamut_eval.annotate._checklists import one_line
from gamut_eval.annotate._db import (
    Decision,
    Image,
    Question,
    QuestionStatus,
    Review,
    Role,
    User,
    dumps,
    updated_rows,
    utc_now,
)
from gamut_eval.annotate._errors import ConflictError, FormError, NotFound, PermissionDenied

REVIEWS_PER_QUESTION = 2
"""Independent reviews each candidate gets before a decision (the paper's two annotators)."""


class ImageStatus(StrEnum):
    """Where an image stands, derived from its questions."""

    ACCEPTED = "accepted"
    ADJUDICATION = "adjudication"
    IN_REVIEW = "in_review"
    NEEDS_CANDIDATES = "needs_candidates"
    NO_CANDIDATES = "no_candidates"


@dataclass(frozen=True)
class Vote:
    """One decision, with the revised text when the decision is ``revise``."""

    decision: Decision
    revised_text: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What a question becomes; ``revised_text`` is the next round's question."""

    status: QuestionStatus
    revised_text: str | None = None
    reason: str = ""


def make_vote(decision: str, revised_text: str | None, original: str) -> Vote:
    """A checked vote: a known decision, and a real revision exactly when revising."""
    try:
        choice = Decision(decision)
    except ValueError:
        raise FormError(
            [f"decision must be accept, revise or discard (got {decision!r})"]
        ) from None
    text = one_line(revised_text or "")
    if choice is not Decision.REVISE:
        return Vote(choice)
    if not text:
        raise FormError(["a revision needs the revised question text"])
    if text == one_line(original):
        raise FormError(["the revised question is the same as the original; choose accept"])
    return Vote(choice, text)


def after_reviews(votes: Sequence[Vote]) -> Outcome:
    """The state after the reviews so far."""
    if len(votes) < REVIEWS_PER_QUESTION:
        return Outcome(QuestionStatus.PENDING)
    first, second = votes[0], votes[1]
    if first.decision is not second.decision:
        return Outcome(
            QuestionStatus.ADJUDICATION,
            reason=f"reviewers disagree: {first.decision.value} vs {second.decision.value}",
        )
    if first.decision is Decision.REVISE and first.revised_text != second.revised_text:
        return Outcome(QuestionStatus.ADJUDICATION, reason="both revise, with different texts")
    return _settled(first)


def after_adjudication(votes: Sequence[Vote], ruling: Vote) -> Outcome:
    """The state after an adjudicator's ruling on two disagreeing reviews."""
    sides = {v.decision for v in votes}
    if ruling.decision not in sides:
        allowed = " or ".join(sorted(d.value for d in sides))
        raise FormError(
            [
                f"side with one reviewer: choose {allowed} (an adjudicator breaks the tie; "
                "a question is accepted only when two people accept it)"
            ]
        )
    return _settled(ruling)


def _settled(vote: Vote) -> Outcome:
    if vote.decision is Decision.ACCEPT:
        return Outcome(QuestionStatus.ACCEPTED)
    if vote.decision is Decision.DISCARD:
        return Outcome(QuestionStatus.DISCARDED)
    return Outcome(QuestionStatus.REVISED, revised_text=vote.revised_text)


def image_status(statuses: Iterable[str]) -> ImageStatus:
    """An image's status from its questions' statuses."""
    live = [QuestionStatus(s) for s in statuses if s != QuestionStatus.REVISED]
    if not live:
        return ImageStatus.NO_CANDIDATES
    if QuestionStatus.ACCEPTED in live:
        return ImageStatus.ACCEPTED
    if all(s is QuestionStatus.DISCARDED for s in live):
        return ImageStatus.NEEDS_CANDIDATES
    if QuestionStatus.ADJUDICATION in live:
        return ImageStatus.ADJUDICATION
    return ImageStatus.IN_REVIEW


ADJUDICATORS = frozenset({Role.ADJUDICATOR.value, Role.ADMIN.value})
"""Roles that may rule on disagreements (and drop rubrics)."""


def get_question(session: Session, question_id: int) -> Question:
    """The question, or ``NotFound``."""
    question = session.get(Question, question_id)
    if question is None:
        raise NotFound(f"no question {question_id}")
    return question


def reviews_of(session: Session, question: Question) -> list[tuple[Review, User]]:
    """Reviews and the adjudication of a question with their authors, oldest first."""
    rows = session.execute(
        select(Review, User)
        .join(User, User.id == Review.user_id)
        .where(Review.question_id == question.id)
        .order_by(Review.created_at, Review.id)
    ).all()
    return [(r, u) for r, u in rows]


def next_for_review(session: Session, user: User) -> Question | None:
    """The oldest-round pending question this user has not reviewed yet."""
    mine = select(Review.question_id).where(Review.user_id == user.id)
    counts = (
        select(Review.question_id, func.count(Review.id).label("n"))
        .group_by(Review.question_id)
        .subquery()
    )
    query = (
        select(Question)
        .outerjoin(counts, counts.c.question_id == Question.id)
        .where(Question.status == QuestionStatus.PENDING.value)
        .where(Question.id.not_in(mine))
        .where(func.coalesce(counts.c.n, 0) < REVIEWS_PER_QUESTION)
        .order_by(Question.round, Question.id)
        .limit(1)
    )
    return session.scalar(query)


def adjudication_queue(session: Session) -> list[Question]:
    """Questions waiting for an adjudicator, oldest first."""
    query = select(Question).where(Question.status == QuestionStatus.ADJUDICATION.value)
    return list(session.scalars(query.order_by(Question.updated_at, Question.id)))


def votes_of(rows: list[tuple[Review, User]]) -> list[Vote]:
    """The reviews' votes (not the adjudication), oldest first."""
    return [Vote(Decision(r.decision), r.revised_text) for r, _ in rows if r.kind == "review"]


def _compare_and_set(session: Session, question: Question, status: str) -> None:
    """Move ``question`` to ``status`` if nobody moved it since it was read."""
    changed = updated_rows(
        session,
        update(Question)
        .where(Question.id == question.id, Question.version == question.version)
        .values(status=status, version=question.version + 1, updated_at=utc_now()),
    )
    if changed != 1:
        raise ConflictError(
            "This question was changed by someone else at the same moment; nothing was "
            "saved. Reload the page to see its current state."
        )
    session.refresh(question)


def _record(
    session: Session, question: Question, user: User, kind: str, vote: Vote, comment: str
) -> None:
    session.add(
        Review(
            question_id=question.id,
            user_id=user.id,
            kind=kind,
            decision=vote.decision.value,
            revised_text=vote.revised_text,
            comment=comment.strip(),
            created_at=utc_now(),
        )
    )
    try:
        session.flush()
    except IntegrityError:
        raise ConflictError("You have already given a decision on this question.") from None


_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]+$")


def revision_id(image_key: str, parent: str, text: str) -> str:
    """The id of a revised question: ``IMAGE-v`` and 10 hex digits of the text's SHA-256,
    the scheme ``gamut build review`` uses for the same revision, so both sides name it
    alike and a re-import of the build's candidates finds it already here."""
    digest = hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:10]
    stem = image_key if _SAFE_ID.match(image_key) else parent
    return f"{stem}-v{digest}"


def _reenter(session: Session, question: Question, outcome: Outcome, people: list[str]) -> None:
    """A revised question re-enters as a new candidate in the next round (once: the same
    revision reached from another candidate of the image is the same question)."""
    text = outcome.revised_text or question.text
    image = session.get(Image, question.image_id)
    candidate_id = revision_id(image.key if image else "", question.candidate_id, text)
    if session.scalar(select(Question.id).where(Question.candidate_id == candidate_id)):
        return
    origin = {"source": "revision", "parent": question.candidate_id, "revised_by": people}
    session.add(
        new_question(candidate_id, question.image_id, question.round + 1, text, origin, question.id)
    )


def new_question(
    candidate_id: str,
    image_id: int,
    round: int,
    text: str,
    origin: Mapping[str, object],
    parent_id: int | None = None,
) -> Question:
    """A candidate waiting for its reviews (an import's, or a revision re-entering)."""
    now = utc_now()
    return Question(
        candidate_id=candidate_id,
        image_id=image_id,
        parent_id=parent_id,
        round=round,
        text=text,
        status=QuestionStatus.PENDING.value,
        origin=dumps(origin),
        version=1,
        created_at=now,
        updated_at=now,
    )


def submit_review(
    session: Session,
    question_id: int,
    user: User,
    decision: str,
    revised_text: str | None,
    comment: str,
) -> Outcome:
    """Record ``user``'s independent review and move the question if it now has two."""
    question = get_question(session, question_id)
    rows = reviews_of(session, question)
    if any(u.id == user.id for _, u in rows):
        raise ConflictError("You have already reviewed this question; a review is final.")
    if question.status != QuestionStatus.PENDING.value or len(rows) >= REVIEWS_PER_QUESTION:
        raise ConflictError(
            f"This question is no longer open for review (it is now {question.status}); "
            "your review was not saved. Take the next one from the queue."
        )
    vote = make_vote(decision, revised_text, question.text)
    outcome = after_reviews([*votes_of(rows), vote])
    _compare_and_set(session, question, outcome.status.value)
    _record(session, question, user, "review", vote, comment)
    if outcome.status is QuestionStatus.REVISED:
        people = [u.name for r, u in rows if r.decision == "revise"]
        _reenter(session, question, outcome, [*people, user.name])
    return outcome


def adjudicate(
    session: Session,
    question_id: int,
    user: User,
    decision: str,
    revised_text: str | None,
    comment: str,
    version: int,
) -> Outcome:
    """An adjudicator's ruling on a disagreement; ``version`` is the one the page showed."""
    if user.role not in ADJUDICATORS:
        raise PermissionDenied("Only adjudicators and admins may adjudicate.")
    question = get_question(session, question_id)
    rows = reviews_of(session, question)
    if any(u.id == user.id for _, u in rows):
        raise PermissionDenied(
            "You reviewed this question yourself; a third person must adjudicate it."
        )
    if question.version != version or question.status != QuestionStatus.ADJUDICATION.value:
        raise ConflictError(_stale_message(question, rows))
    ruling = make_vote(decision, revised_text, question.text)
    outcome = after_adjudication(votes_of(rows), ruling)
    _compare_and_set(session, question, outcome.status.value)
    _record(session, question, user, "adjudication", ruling, comment)
    if outcome.status is QuestionStatus.REVISED:
        _reenter(session, question, outcome, [user.name])
    return outcome


def _stale_message(question: Question, rows: list[tuple[Review, User]]) -> str:
    ruled = [(r, u) for r, u in rows if r.kind == "adjudication"]
    who = f" by {ruled[-1][1].name} at {ruled[-1][0].created_at}" if ruled else ""
    return (
        f"This question changed since you opened it: it is now {question.status}{who}. "
        "Your ruling was not saved; reload the page to see the current state."
    )


def origin_of(question: Question) -> dict[str, object]:
    """The stored provenance of a question (where the candidate came from)."""
    data = json.loads(question.origin)
    return data if isinstance(data, dict) else {}
