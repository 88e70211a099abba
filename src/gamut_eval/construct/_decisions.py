"""People's decisions on candidate questions, and where an image's candidates stand.

Human decisions on candidate questions, read from the annotation app's JSONL export.

One row per decision: ``{"candidate_id": ..., "decision": "accept" | "revise" | "discard",
"revised_question": ...}`` (``question_id`` is accepted for ``candidate_id``), plus optional
provenance (``annotator``, ``round``, ``decided_at``, ``comment``, ``metadata``). The export
holds final (adjudicated) decisions; when a candidate appears twice the later row wins, so
exports of successive rounds can simply be concatenated.

Where an image's candidates stand, from LLM reviews and human decisions. Pure.

An image's question is accepted when a candidate passes the LLM review and a human accepted
it (docs/method.md [B3], [B4]). A specific question is preferred over a boilerplate one: while a
specific candidate still awaits people, an accepted boilerplate one waits too; when no
candidate is both passing and specific, the reviewer proposes new ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pydantic

from gamut_eval._files import read_jsonl
from gamut_eval.construct._models import (
    Candidate,
    CandidateReview,
    CandidateState,
    Decision,
    Provenance,
)
from gamut_eval.construct._workdir import content_hash
from gamut_eval.errors import ErrorDetail, ValidationError


def load_decisions(paths: list[Path] | tuple[Path, ...]) -> dict[str, Decision]:
    """The latest decision per candidate id across the files, in order; every bad row of
    every file is reported at once."""
    errors: list[ErrorDetail] = []
    decisions: dict[str, Decision] = {}
    for path in paths:
        for line, data in read_jsonl(path, errors):
            try:
                decision = Decision.model_validate(data)
            except pydantic.ValidationError as exc:
                from gamut_eval.rubric import pydantic_details

                errors += [d.in_file(f"{path}:{line}") for d in pydantic_details(exc)]
                continue
            decisions[decision.candidate_id] = decision
    if errors:
        raise ValidationError(errors)
    return decisions


def revision_of(candidate: Candidate, decision: Decision) -> Candidate:
    """The new candidate a ``revise`` decision creates; its id derives from its text, so the
    same revision always gets the same id."""
    text = (decision.revised_question or "").strip()
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    decided = content_hash(decision)
    provenance = Provenance(
        stage="review", model=None, prompt_version=None, inputs={"decision": decided}, key=decided
    )
    return Candidate(
        id=f"{candidate.image_id}-v{digest}",
        image_id=candidate.image_id,
        question=text,
        origin="revised",
        parent=candidate.id,
        provenance=provenance,
    )


def expand_revisions(pool: dict[str, Candidate], decisions: Mapping[str, Decision]) -> None:
    """Add to ``pool`` the revision of every revised candidate, revisions of revisions
    included (each revised candidate re-enters the next round)."""
    changed = True
    while changed:
        changed = False
        for candidate in list(pool.values()):
            decision = decisions.get(candidate.id)
            if decision is not None and decision.decision == "revise":
                revised = revision_of(candidate, decision)
                if revised.id not in pool:
                    pool[revised.id] = revised
                    changed = True


Status = Literal["accepted", "awaiting_human", "needs_candidates", "continue"]


@dataclass(frozen=True, slots=True)
class PoolVerdict:
    """The image's status after a review round; ``continue``: review the new proposals."""

    status: Status
    chosen: Candidate | None = None


def live_candidates(
    pool: Mapping[str, Candidate], decisions: Mapping[str, Decision]
) -> list[Candidate]:
    """Candidates still in play: not discarded, not replaced by a revision."""
    return [
        c for c in pool.values() if c.id not in decisions or decisions[c.id].decision == "accept"
    ]


def ranked(
    candidates: Sequence[Candidate],
    reviews: Mapping[str, CandidateReview],
    ranking: Sequence[str],
) -> list[Candidate]:
    """Specific before boilerplate, then by the reviewer's ranking (unranked last)."""
    order = {cid: i for i, cid in enumerate(ranking)}

    def key(c: Candidate) -> tuple[bool, int]:
        return reviews[c.id].boilerplate, order.get(c.id, len(order))

    return sorted(candidates, key=key)


def decide(
    live: Sequence[Candidate],
    reviews: Mapping[str, CandidateReview],
    ranking: Sequence[str],
    decisions: Mapping[str, Decision],
    proposed_now: bool,
) -> PoolVerdict:
    """The image's status (see the module docstring)."""
    passing = [c for c in live if c.id in reviews and reviews[c.id].passes]
    accepted = ranked([c for c in passing if c.id in decisions], reviews, ranking)
    specific = [c for c in accepted if not reviews[c.id].boilerplate]
    if specific:
        return PoolVerdict("accepted", specific[0])
    if proposed_now:
        return PoolVerdict("continue")
    pending = [c for c in passing if c.id not in decisions]
    pending_specific = [c for c in pending if not reviews[c.id].boilerplate]
    if accepted and not pending_specific:
        return PoolVerdict("accepted", accepted[0])
    if pending:
        return PoolVerdict("awaiting_human")
    return PoolVerdict("needs_candidates")


def candidate_states(
    pool: Mapping[str, Candidate],
    reviews: Mapping[str, CandidateReview],
    decisions: Mapping[str, Decision],
    verdict: PoolVerdict,
) -> list[CandidateState]:
    """Every candidate of the image with where it stands."""
    states = []
    for c in pool.values():
        decision = decisions.get(c.id)
        kind = decision.decision if decision else None
        review = reviews.get(c.id)
        if kind in ("discard", "revise"):
            state = "discarded" if kind == "discard" else "revised"
        elif verdict.chosen is not None and c.id == verdict.chosen.id:
            state = "chosen"
        elif review is None:
            state = "pending_review"
        elif not review.passes:
            state = "rejected_by_llm"
        elif kind is None and verdict.status != "accepted":
            state = "awaiting_human"
        else:
            state = "not_chosen"
        states.append(CandidateState(candidate=c, review=review, decision=kind, state=state))
    return states
