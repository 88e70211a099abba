"""Provenance of every decision, as JSON for the exported files.

A record's ``metadata.annotation`` says who decided what and when: the question's review
history (each round, each review, the adjudication), every rubric event with what it
changed, the upstream corrections, and the final diff against the compiled checklist.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from gamut_eval.annotate._diff import diff_checklists
from gamut_eval.annotate._models import Question, Rubric, RubricEvent
from gamut_eval.annotate._questions import origin_of, reviews_of
from gamut_eval.annotate._rubrics import checklist_of, compiled_of, events_of
from gamut_eval.rubric import Checklist

__all__ = ["question_history", "question_provenance", "rubric_provenance"]


def question_provenance(session: Session, question: Question) -> dict[str, Any]:
    """One question: its origin, round, status and every review and ruling on it."""
    return {
        "candidate_id": question.candidate_id,
        "round": question.round,
        "question": question.text,
        "status": question.status,
        "origin": origin_of(question),
        "reviews": [
            {
                "by": user.name,
                "kind": review.kind,
                "decision": review.decision,
                "revised_text": review.revised_text,
                "comment": review.comment,
                "at": review.created_at,
            }
            for review, user in reviews_of(session, question)
        ],
    }


def question_history(session: Session, question: Question) -> list[dict[str, Any]]:
    """The question and the earlier rounds it was revised from, first round first."""
    chain = [question]
    while chain[-1].parent_id is not None:
        parent = session.get(Question, chain[-1].parent_id)
        if parent is None:
            break
        chain.append(parent)
    return [question_provenance(session, q) for q in reversed(chain)]


def _event(event: RubricEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "at": event.created_at,
        "by": event.actor,
        "action": event.action,
        "round": event.round,
    }
    if event.comment:
        out["comment"] = event.comment
    before = json.loads(event.before) if event.before else None
    after = json.loads(event.after) if event.after else None
    if event.action == "checklist" and before and after:
        old, new = Checklist.model_validate(before), Checklist.model_validate(after)
        out["changes"] = diff_checklists(old, new).summary()
    elif event.action != "import":
        out["before"], out["after"] = before, after
    return out


def _corrections(events: list[RubricEvent]) -> list[dict[str, Any]]:
    return [
        {
            "field": "entity",
            "before": json.loads(e.before or "{}").get("entity"),
            "after": json.loads(e.after or "{}").get("entity"),
            "by": e.actor,
            "at": e.created_at,
            "comment": e.comment,
        }
        for e in events
        if e.action == "entity"
    ]


def _ambiguous(rubric: Rubric, events: list[RubricEvent]) -> dict[str, Any] | None:
    if rubric.ambiguous_note is None:
        return None
    marks = [e for e in events if e.action == "ambiguous"]
    last = marks[-1] if marks else None
    return {
        "note": rubric.ambiguous_note,
        "by": last.actor if last else None,
        "at": last.created_at if last else None,
    }


def rubric_provenance(session: Session, rubric: Rubric) -> dict[str, Any]:
    """Everything people decided about one question's rubric (and its question)."""
    events = events_of(session, rubric)
    out: dict[str, Any] = {
        "rubric": {
            "round": rubric.round,
            "status": rubric.status,
            "changes_vs_compiled": diff_checklists(
                compiled_of(rubric), checklist_of(rubric)
            ).summary(),
            "events": [_event(e) for e in events],
        },
        "corrections": _corrections(events),
        "ambiguous": _ambiguous(rubric, events),
    }
    if rubric.question_id is not None:
        question = session.get(Question, rubric.question_id)
        if question is not None:
            out["question_review"] = question_history(session, question)
    return out
