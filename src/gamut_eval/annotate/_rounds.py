"""The question-round state machine (docs/method.md [B3]), as pure functions.

    pending --2 reviews agree: accept--> accepted          (accepted by two: advances)
    pending --2 reviews agree: discard--> discarded
    pending --2 reviews agree: revise, same text--> revised (the text re-enters next round)
    pending --reviews differ (or two different revisions)--> adjudication
    adjudication --ruling sides with one reviewer--> accepted | revised | discarded

The adjudicator breaks a tie by siding with one reviewer; it cannot add a third option,
so an accepted question has always been accepted by two people (a reviewer and the
adjudicator, or both reviewers), as the paper requires. An image whose questions are all
discarded (revised ones are superseded by their next-round version) needs new candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from gamut_eval.annotate._errors import FormError
from gamut_eval.annotate._models import Decision, QuestionStatus

__all__ = [
    "REVIEWS_PER_QUESTION",
    "ImageStatus",
    "Outcome",
    "Vote",
    "after_adjudication",
    "after_reviews",
    "image_status",
    "make_vote",
]

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


def _normal(text: str) -> str:
    return " ".join(text.split())


def make_vote(decision: str, revised_text: str | None, original: str) -> Vote:
    """A checked vote: a known decision, and a real revision exactly when revising."""
    try:
        choice = Decision(decision)
    except ValueError:
        raise FormError(
            [f"decision must be accept, revise or discard (got {decision!r})"]
        ) from None
    text = _normal(revised_text or "")
    if choice is not Decision.REVISE:
        return Vote(choice)
    if not text:
        raise FormError(["a revision needs the revised question text"])
    if text == _normal(original):
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
