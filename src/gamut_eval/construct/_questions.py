"""The question stages: candidate questions from each image, and the stranger test (the LLM
review) merged with people's decisions.

Stage ``questions``: a multimodal model proposes candidate questions for each image.

Stage ``review``: the LLM pass over candidates, merged with human decisions. Per image, in
rounds: the candidates still in play (human revisions added, discards removed) are reviewed
in one call against the hard requirements, above all the stranger test, with a reason for
every rejection; the passing ones are ranked; when none is both passing and specific, the
reviewer proposes new candidates, which the next round reviews. A round's call is a cached
unit keyed by the candidates it saw, so decisions that only accept cost no new call, and a
rerun replays the same rounds and the same candidate ids.

Human decisions are read from the annotation app's JSONL export, one row per decision:
``{"candidate_id": ..., "decision": "accept" | "revise" | "discard", "revised_question":
...}`` (``question_id`` is accepted for ``candidate_id``), plus optional provenance
(``annotator``, ``round``, ``decided_at``, ``comment``, ``metadata``). The export holds final
(adjudicated) decisions; when a candidate appears twice the later row wins, so exports of
successive rounds can simply be concatenated.

An image's question is accepted when a candidate passes the LLM review and a human accepted
it (docs/method.md [B3], [B4]). A specific question is preferred over a boilerplate one:
while a specific candidate still awaits people, an accepted boilerplate one waits too; when
no candidate is both passing and specific, the reviewer proposes new ones.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import pydantic

from gamut_eval.construct._llm import Prompt, object_schema
from gamut_eval.construct._models import (
    REQUIREMENTS,
    AcceptedQuestion,
    AnnotationTask,
    Candidate,
    CandidateReview,
    CandidateState,
    Decision,
    FrozenModel,
    ImageRecord,
    ImageReview,
    Invalid,
    Provenance,
    ReviewCall,
    StageReport,
)
from gamut_eval.construct._prompts import (
    QUESTIONS_SYSTEM,
    QUESTIONS_VERSION,
    REVIEW_SYSTEM,
    REVIEW_VERSION,
    questions_user,
    review_user,
)
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._text import names_entity, normalise
from gamut_eval.construct._workdir import (
    Workdir,
    content_hash,
    data_url,
    jsonl_rows,
    load_images,
)
from gamut_eval.errors import ErrorDetail, InputError, ValidationError

MAX_QUESTION_CHARS = 300
"""A question longer than this is not "concise and natural" (docs/method.md [B2])."""

_SCHEMA = object_schema(
    {
        "candidates": {
            "type": "array",
            "items": object_schema({"question": {"type": "string"}, "aspect": {"type": "string"}}),
        }
    }
)


class ImageCandidates(FrozenModel):
    """The candidates written for one image (a cached unit)."""

    image_id: str
    candidates: tuple[Candidate, ...]
    provenance: Provenance


def image_inputs(image: ImageRecord) -> dict[str, str]:
    """Content hashes of what a model sees of an image: the bytes and the manifest facts."""
    facts = {"entity": image.entity, "domain": image.domain}
    return {"image": image.sha256, "facts": content_hash(facts)}


def question_errors(questions: list[str], entity: str | None, where: str) -> list[str]:
    """Problems of a list of questions that code can see: empty, long, repeated, naming the
    entity (the plainest failure of the stranger test)."""
    errors = []
    seen: set[str] = set()
    for i, question in enumerate(questions):
        label = f"{where}[{i}]"
        if not question.strip():
            errors.append(f"{label}: the question is empty")
        elif len(question) > MAX_QUESTION_CHARS:
            errors.append(f"{label}: longer than {MAX_QUESTION_CHARS} characters; be concise")
        if normalise(question) in seen:
            errors.append(f"{label}: repeats an earlier candidate")
        seen.add(normalise(question))
        if entity and names_entity(question, entity):
            errors.append(
                f"{label}: names the entity ({entity!r}); refer to it only through what the "
                "photo shows (stranger test)"
            )
    return errors


def _validator(
    image: ImageRecord, count: int
) -> Callable[[Any], Awaitable[list[tuple[str, str | None]]]]:
    async def validate(data: Any) -> list[tuple[str, str | None]]:
        raw = data.get("candidates")
        if not isinstance(raw, list) or not all(
            isinstance(c, dict) and isinstance(c.get("question"), str) for c in raw
        ):
            raise Invalid(['`candidates` must be a list of {"question": ..., "aspect": ...}'])
        questions = [c["question"].strip() for c in raw]
        errors = question_errors(questions, image.entity, "candidates")
        if len(raw) != count:
            errors.append(f"expected exactly {count} candidates, found {len(raw)}")
        if errors:
            raise Invalid(errors)
        aspects = [c.get("aspect") if isinstance(c.get("aspect"), str) else None for c in raw]
        return list(zip(questions, aspects, strict=True))

    return validate


async def _write_candidates(call: UnitCall, image: ImageRecord, count: int) -> ImageCandidates:
    prompt = Prompt(
        QUESTIONS_SYSTEM,
        questions_user(count, image.entity, image.domain),
        (data_url(image.image),),
    )
    pairs, _ = await call.ask(prompt, _validator(image, count), _SCHEMA)
    provenance = call.provenance()
    candidates = tuple(
        Candidate(
            id=f"{image.id}-c{i}",
            image_id=image.id,
            question=question,
            origin="generated",
            aspect=aspect,
            provenance=provenance,
        )
        for i, (question, aspect) in enumerate(pairs, start=1)
    )
    return ImageCandidates(image_id=image.id, candidates=candidates, provenance=provenance)


async def run_questions(
    session: BuildSession, images: str | Path, per_image: int = 5
) -> StageReport:
    """Write ``questions/images.jsonl`` and ``questions/candidates.jsonl``."""
    if per_image < 1:
        raise InputError(f"per_image must be at least 1 (found: {per_image})", setting="per_image")
    records = load_images(images)
    run = session.stage("questions", QUESTIONS_VERSION, {"per_image": per_image})

    async def one(image: ImageRecord) -> ImageCandidates | None:
        work = partial(_write_candidates, image=image, count=per_image)
        return await run.unit(image.id, image_inputs(image), work, ImageCandidates)

    results = await asyncio.gather(*(one(r) for r in records))
    workdir = session.workdir
    images_path = workdir.write("images", records)
    candidates = [c for r in results if r is not None for c in r.candidates]
    candidates_path = workdir.write("candidates", candidates)
    notes = (f"{len(candidates)} candidate questions for {len(records)} image(s)",)
    return run.finish(
        units=len(records),
        outputs={"images": images_path, "candidates": candidates_path},
        notes=notes,
    )


_FAILURE = object_schema(
    {"requirement": {"type": "string", "enum": list(REQUIREMENTS)}, "reason": {"type": "string"}}
)
_REVIEW = object_schema(
    {
        "candidate_id": {"type": "string"},
        "passes": {"type": "boolean"},
        "failures": {"type": "array", "items": _FAILURE},
        "boilerplate": {"type": "boolean"},
    }
)
REVIEW_SCHEMA = object_schema(
    {
        "reviews": {"type": "array", "items": _REVIEW},
        "ranking": {"type": "array", "items": {"type": "string"}},
        "new_candidates": {"type": "array", "items": {"type": "string"}},
    }
)
"""The reviewer's reply, for providers with structured output."""

ReviewReply = tuple[list[CandidateReview], tuple[str, ...], list[str]]


def _parse_reviews(raw: Any, live: list[Candidate]) -> tuple[list[CandidateReview], list[str]]:
    errors: list[str] = []
    if not isinstance(raw, list):
        return [], ["`reviews` must be a list with one review per candidate"]
    reviews = []
    for i, row in enumerate(raw):
        try:
            reviews.append(CandidateReview.model_validate(row))
        except pydantic.ValidationError as exc:
            errors += [f"reviews[{i}]: {e['msg']} at {e['loc']}" for e in exc.errors()]
    ids = [r.candidate_id for r in reviews]
    expected = [c.id for c in live]
    errors += [f"no review of candidate {cid!r}" for cid in expected if cid not in ids]
    errors += [f"review of unknown candidate {cid!r}" for cid in ids if cid not in expected]
    errors += [
        f"candidate {cid!r} reviewed twice" for cid in sorted(set(ids)) if ids.count(cid) > 1
    ]
    for r in reviews:
        if r.passes == bool(r.failures):
            errors.append(
                f"review of {r.candidate_id!r}: `failures` must be empty exactly when it passes"
            )
    return reviews, errors


def _parse_ranking(raw: Any, passing: list[str]) -> tuple[tuple[str, ...], list[str]]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        return (), ["`ranking` must be a list of candidate ids"]
    errors = [f"`ranking` lists {x!r}, which does not pass" for x in raw if x not in passing]
    unique = tuple(dict.fromkeys(raw))
    # passing candidates the reviewer left out of its ranking go last, in order
    return unique + tuple(x for x in passing if x not in unique), errors


def review_validator(
    pool: Mapping[str, Candidate], entity: str | None, live: list[Candidate], proposals: int
) -> Callable[[Any], Awaitable[ReviewReply]]:
    async def validate(data: Any) -> ReviewReply:
        reviews, errors = _parse_reviews(data.get("reviews"), live)
        passing = [r.candidate_id for r in reviews if r.passes]
        ranking, more = _parse_ranking(data.get("ranking", []), passing)
        errors += more
        specific = [r for r in reviews if r.passes and not r.boilerplate]
        new: list[str] = []
        if not specific:
            raw = data.get("new_candidates")
            if not isinstance(raw, list) or not raw or not all(isinstance(q, str) for q in raw):
                errors.append(
                    "no candidate both passes and is specific: propose new questions in "
                    "`new_candidates` (a non-empty list of strings)"
                )
            else:
                new = [q.strip() for q in raw][:proposals]
                errors += _proposal_errors(new, pool, entity)
        if errors:
            raise Invalid(errors)
        return reviews, ranking, new

    return validate


def _proposal_errors(
    new: list[str], pool: Mapping[str, Candidate], entity: str | None
) -> list[str]:
    errors = question_errors(new, entity, "new_candidates")
    known = {normalise(c.question) for c in pool.values()}
    errors += [
        f"new_candidates[{i}]: repeats a question already shown"
        for i, q in enumerate(new)
        if normalise(q) in known
    ]
    return errors


def proposed_candidates(
    image_id: str, questions: list[str], call: UnitCall
) -> tuple[Candidate, ...]:
    provenance = call.provenance()
    return tuple(
        Candidate(
            id=f"{image_id}-x{hashlib.sha256(q.encode('utf-8')).hexdigest()[:10]}",
            image_id=image_id,
            question=q,
            origin="proposed",
            provenance=provenance,
        )
        for q in questions
    )


def load_decisions(paths: list[Path] | tuple[Path, ...]) -> dict[str, Decision]:
    """The latest decision per candidate id across the files, in order; every bad row of
    every file is reported at once."""
    errors: list[ErrorDetail] = []
    decisions: dict[str, Decision] = {}
    for path in paths:
        for _, decision in jsonl_rows(path, Decision, errors):
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
    while verdict.status == "continue":
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
        # out of rounds, fresh proposals stay unreviewed: decide without them
        more = bool(fresh) and state.rounds < max_rounds
        verdict = decide(live, state.reviews, state.ranking, decisions, more)
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
        status = "error" if verdict is None else verdict.status  # never "continue" here
        chosen = verdict.chosen if verdict else None
        self.images.append(
            ImageReview(
                image_id=state.image.id,
                status=status,
                candidate_id=chosen.id if chosen else None,
                rounds=state.rounds,
                message=_MESSAGES.get(status),
                provenance=state.last.provenance if state.last else None,
            )
        )
        if verdict is None:
            return
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
    for name, value in (("max_rounds", max_rounds), ("proposals", proposals)):
        if value < 1:
            raise InputError(f"{name} must be at least 1 (found: {value})", setting=name)
    workdir = session.workdir
    images = workdir.read("images", ImageRecord, missing_hint=_HINT)
    candidates = workdir.read("candidates", Candidate, missing_hint=_HINT)
    human = load_decisions(list(decisions))
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
    notes, next_step, next_settings = _summary(out, unknown, paths["to_annotate"])
    return run.finish(
        units=len(images),
        outputs=paths,
        done=sum(1 for i in out.images if i.status != "error"),
        cached=sum(1 for s in states if s.keys and not set(s.keys) & run.fresh_keys),
        notes=notes,
        next_step=next_step,
        next_step_settings=next_settings,
    )


def _summary(
    out: _Outputs, unknown: list[str], tasks: Path
) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    """The report's notes, its next step and the settings that step names."""
    count = {s: sum(1 for i in out.images if i.status == s) for s in _MESSAGES}
    notes = [
        f"{len(out.accepted)} image(s) accepted, {count['awaiting_human']} awaiting human "
        f"review, {count['needs_candidates']} needing new candidates"
    ]
    if unknown:
        notes.append(f"decisions for unknown candidates were ignored: {', '.join(unknown)}")
    steps, settings = [], []
    if count["awaiting_human"]:
        steps.append(
            f"{count['awaiting_human']} image(s) need human review: import {tasks} into the "
            "annotation app (or review it by hand), have each candidate accepted, revised or "
            "discarded, and rerun with every decision exported so far as decisions "
            "(DECISIONS.jsonl)"
        )
        settings.append("decisions")
    if count["needs_candidates"]:
        steps.append(
            f"{count['needs_candidates']} image(s) have new candidates not yet reviewed: rerun "
            "`gamut build review` (or raise max_rounds)"
        )
        settings.append("max_rounds")
    return tuple(notes), "; ".join(steps) or None, tuple(settings)
