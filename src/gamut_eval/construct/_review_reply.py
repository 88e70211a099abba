"""The review's reply: parsed and checked, with errors to feed back to the reviewer."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pydantic

from gamut_eval.construct._errors import Invalid
from gamut_eval.construct._jsonschema import object_schema
from gamut_eval.construct._question_models import REQUIREMENTS, Candidate, CandidateReview
from gamut_eval.construct._questions import question_errors
from gamut_eval.construct._session import UnitCall
from gamut_eval.construct._text import normalise

__all__ = ["REVIEW_SCHEMA", "proposed_candidates", "review_validator"]

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
