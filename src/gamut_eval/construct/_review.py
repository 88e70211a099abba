"""Stage ``review``: the LLM pass over candidates, merged with human decisions.

Per image, in rounds: the candidates still in play (human revisions added, discards
removed) are reviewed in one call against the hard requirements, above all the stranger
test, with a reason for every rejection; the passing ones are ranked; when none is both
passing and specific, the reviewer proposes new candidates, which the next round reviews.
A round's call is a cached unit keyed by the candidates it saw, so decisions that only
accept cost no new call, and a rerun replays the same rounds and the same candidate ids.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._decisions import expand_revisions, load_decisions
from gamut_eval.construct._images import data_url
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._models import ImageRecord, StageReport
from gamut_eval.construct._pool import (
    PoolVerdict,
    candidate_states,
    decide,
    live_candidates,
    ranked,
)
from gamut_eval.construct._prompts_questions import REVIEW_SYSTEM, REVIEW_VERSION, review_user
from gamut_eval.construct._question_models import (
    AcceptedQuestion,
    AnnotationTask,
    Candidate,
    CandidateReview,
    CandidateState,
    Decision,
    ImageReview,
    ReviewCall,
)
from gamut_eval.construct._questions import image_inputs
from gamut_eval.construct._review_reply import (
    REVIEW_SCHEMA,
    proposed_candidates,
    review_validator,
)
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._workdir import Workdir
from gamut_eval.errors import InputError

__all__ = ["run_review"]

_HINT = "run `gamut build questions` first"


@dataclass
class _Image:
    """One image's review in progress."""

    image: ImageRecord
    pool: dict[str, Candidate]
    reviews: dict[str, CandidateReview] = field(default_factory=dict)
    ranking: tuple[str, ...] = ()
    last: ReviewCall | None = None
    rounds: int = 0
    keys: list[str] = field(default_factory=list)
    """Cache keys of its review calls."""


async def _round(
    run: StageRun, state: _Image, decisions: Mapping[str, Decision], proposals: int
) -> ReviewCall | None:
    image = state.image
    live = live_candidates(state.pool, decisions)
    discarded = [c.question for c in state.pool.values() if c.id not in {x.id for x in live}]
    shown = [{"candidate_id": c.id, "question": c.question} for c in live]

    async def work(call: UnitCall) -> ReviewCall:
        prompt = Prompt(
            REVIEW_SYSTEM,
            review_user(shown, discarded, image.entity, proposals),
            (data_url(image.image),),
        )
        validate = review_validator(state.pool, image.entity, live, proposals)
        (reviews, ranking, new), _ = await call.ask(prompt, validate, REVIEW_SCHEMA)
        return ReviewCall(
            image_id=image.id,
            reviews=tuple(reviews),
            ranking=ranking,
            proposed=proposed_candidates(image.id, new, call),
            provenance=call.provenance(),
        )

    inputs = {
        **image_inputs(image),
        "live": content_hash(shown),
        "discarded": content_hash(discarded),
    }
    return await run.unit(image.id, inputs, work, ReviewCall)


async def _review_image(
    run: StageRun, state: _Image, decisions: Mapping[str, Decision], max_rounds: int, proposals: int
) -> PoolVerdict | None:
    if not state.pool:
        why = "the questions stage wrote no candidate for it (see questions/errors.jsonl)"
        run.fail(state.image.id, "no-candidates", why)
        return None
    verdict = PoolVerdict("continue")
    while verdict.status == "continue" and state.rounds < max_rounds:
        state.rounds += 1
        expand_revisions(state.pool, decisions)
        call = await _round(run, state, decisions, proposals)
        if call is None:
            return None
        state.last = call
        state.keys.append(call.provenance.key)
        state.reviews.update({r.candidate_id: r for r in call.reviews})
        state.ranking = call.ranking
        fresh = [p for p in call.proposed if p.id not in state.pool]
        state.pool.update({p.id: p for p in fresh})
        live = live_candidates(state.pool, decisions)
        verdict = decide(live, state.reviews, state.ranking, decisions, bool(fresh))
    if verdict.status == "continue":  # out of rounds with proposals not yet reviewed
        live = live_candidates(state.pool, decisions)
        verdict = decide(live, state.reviews, state.ranking, decisions, False)
    return verdict


_MESSAGES = {
    "awaiting_human": "candidates passed the LLM review and await human decisions",
    "needs_candidates": "no candidate is left in play: rerun review to review new proposals",
}


@dataclass
class _Outputs:
    images: list[ImageReview] = field(default_factory=list)
    states: list[CandidateState] = field(default_factory=list)
    tasks: list[AnnotationTask] = field(default_factory=list)
    accepted: list[AcceptedQuestion] = field(default_factory=list)

    def write(self, workdir: Workdir) -> dict[str, Path]:
        return {
            "accepted": workdir.write("accepted", self.accepted),
            "images": workdir.write("review_images", self.images),
            "candidates": workdir.write("review_candidates", self.states),
            "to_annotate": workdir.write("to_annotate", self.tasks),
        }

    def add(
        self, state: _Image, verdict: PoolVerdict | None, decisions: Mapping[str, Decision]
    ) -> None:
        image = state.image
        provenance = state.last.provenance if state.last else None
        if verdict is None:
            self.images.append(
                ImageReview(
                    image_id=image.id, status="error", rounds=state.rounds, provenance=provenance
                )
            )
            return
        status = verdict.status if verdict.status != "continue" else "needs_candidates"
        chosen = verdict.chosen
        self.images.append(
            ImageReview(
                image_id=image.id,
                status=status,
                candidate_id=chosen.id if chosen else None,
                rounds=state.rounds,
                message=_MESSAGES.get(status),
                provenance=provenance,
            )
        )
        states = candidate_states(state.pool, state.reviews, decisions, verdict)
        self.states += states
        self.tasks += _tasks(state, states)
        if chosen is not None and state.last is not None:
            self.accepted.append(_accepted(state, chosen, state.last))


def _tasks(state: _Image, states: list[CandidateState]) -> list[AnnotationTask]:
    waiting = [s.candidate for s in states if s.state == "awaiting_human"]
    order = ranked(waiting, state.reviews, state.ranking)
    positions = {cid: i for i, cid in enumerate(state.ranking, start=1)}
    return [
        AnnotationTask(
            candidate_id=c.id,
            image_id=c.image_id,
            image=state.image.image,
            question=c.question,
            origin=c.origin,
            boilerplate=state.reviews[c.id].boilerplate,
            rank=positions.get(c.id),
        )
        for c in order
    ]


def _accepted(state: _Image, chosen: Candidate, call: ReviewCall) -> AcceptedQuestion:
    image = state.image
    return AcceptedQuestion(
        id=image.id,
        image_id=image.id,
        image=image.image,
        image_sha256=image.sha256,
        question=chosen.question,
        candidate_id=chosen.id,
        entity=image.entity,
        domain=image.domain,
        popularity=image.popularity,
        boilerplate=state.reviews[chosen.id].boilerplate,
        provenance=call.provenance,
    )


def _pool(
    image: ImageRecord, generated: list[Candidate], proposed: list[Candidate]
) -> dict[str, Candidate]:
    """The image's generated candidates, plus those proposed by earlier runs of the review.

    Proposals are kept once made: people may already have decided on them, and a later
    review call (after other decisions changed what it sees) must not lose them.
    """
    pool = {c.id: c for c in generated if c.image_id == image.id}
    if pool:
        pool.update({c.id: c for c in proposed if c.image_id == image.id and c.id not in pool})
    return pool


async def run_review(
    session: BuildSession,
    decisions: list[Path] | tuple[Path, ...] = (),
    max_rounds: int = 3,
    proposals: int = 3,
) -> StageReport:
    """Review every image's candidates; write ``review/*.jsonl`` (``accepted.jsonl`` holds
    the questions accepted by the LLM and by people)."""
    if max_rounds < 1 or proposals < 1:
        raise InputError("--max-rounds and --proposals must be at least 1")
    workdir = session.workdir
    images = workdir.read("images", ImageRecord, missing_hint=_HINT)
    candidates = workdir.read("candidates", Candidate, missing_hint=_HINT)
    human = load_decisions(list(decisions))
    session.require_model("review")
    run = session.stage("review", REVIEW_VERSION, {"proposals": proposals})
    earlier = workdir.read_optional("review_candidates", CandidateState)
    proposed = [s.candidate for s in earlier if s.candidate.origin == "proposed"]
    states = [_Image(i, _pool(i, candidates, proposed)) for i in images]
    verdicts = await asyncio.gather(
        *(_review_image(run, s, human, max_rounds, proposals) for s in states)
    )
    out = _Outputs()
    for state, verdict in zip(states, verdicts, strict=True):
        out.add(state, verdict, human)
    paths = out.write(workdir)
    known = {s.candidate.id for s in out.states}
    unknown = sorted(set(human) - known)
    notes, next_step = _summary(out, unknown, paths["to_annotate"])
    return run.finish(
        units=len(images),
        outputs=paths,
        done=sum(1 for i in out.images if i.status != "error"),
        cached=sum(1 for s in states if s.keys and not set(s.keys) & run.fresh_keys),
        notes=notes,
        next_step=next_step,
    )


def _summary(out: _Outputs, unknown: list[str], tasks: Path) -> tuple[tuple[str, ...], str | None]:
    count = {s: sum(1 for i in out.images if i.status == s) for s in _MESSAGES}
    notes = [
        f"{len(out.accepted)} image(s) accepted, {count['awaiting_human']} awaiting human "
        f"review, {count['needs_candidates']} needing new candidates"
    ]
    if unknown:
        notes.append(f"decisions for unknown candidates were ignored: {', '.join(unknown)}")
    steps = []
    if count["awaiting_human"]:
        steps.append(
            f"{count['awaiting_human']} image(s) need human review: import {tasks} into the "
            "annotation app (or review it by hand), have each candidate accepted, revised or "
            "discarded, and rerun with every decision exported so far: --decisions DECISIONS.jsonl"
        )
    if count["needs_candidates"]:
        steps.append(
            f"{count['needs_candidates']} image(s) have new candidates not yet reviewed: rerun "
            "`gamut build review` (or raise --max-rounds)"
        )
    return tuple(notes), "; ".join(steps) or None
