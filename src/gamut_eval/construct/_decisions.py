"""Human decisions on candidate questions, read from the annotation app's JSONL export.

One row per decision: ``{"candidate_id": ..., "decision": "accept" | "revise" | "discard",
"revised_question": ...}`` (``question_id`` is accepted for ``candidate_id``), plus optional
provenance (``annotator``, ``round``, ``decided_at``, ``comment``, ``metadata``). The export
holds final (adjudicated) decisions; when a candidate appears twice the later row wins, so
exports of successive rounds can simply be concatenated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import pydantic

from gamut_eval._files import read_jsonl
from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._models import Provenance
from gamut_eval.construct._question_models import Candidate, Decision
from gamut_eval.errors import ErrorDetail, ValidationError

__all__ = ["expand_revisions", "load_decisions", "revision_of"]


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
