"""Stage ``draft``: a meta-rubric grounded in the snippets, validated, then compiled.

The model writes the items as structured output (the meta-rubric's JSON Schema); the reply
is validated by the project's validator plus the grounding rule, and the errors are fed
back for a bounded number of repairs. A rubric still invalid after that ends the question's
draft with a recorded error (``draft/errors.jsonl``); the other questions go on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._evidence import ACCEPTED_HINT, question_inputs
from gamut_eval.construct._jsonschema import rubric_items_schema
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._models import StageReport
from gamut_eval.construct._prompts_rubric import DRAFT_SYSTEM, DRAFT_VERSION, draft_user
from gamut_eval.construct._question_models import AcceptedQuestion
from gamut_eval.construct._rubric_check import rubric_from_items
from gamut_eval.construct._rubric_models import DraftRecord, EvidenceRecord, Snippet
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.rubric import MetaRubric, compile_rubric

__all__ = ["run_draft", "snippet_payload"]


def snippet_payload(snippets: tuple[Snippet, ...] | list[Snippet]) -> list[dict[str, Any]]:
    """What a prompt shows of each snippet: id, text, title."""
    return [{"id": s.id, "title": s.title, "text": s.text} for s in snippets]


async def _draft_one(
    call: UnitCall, question: AcceptedQuestion, evidence: EvidenceRecord
) -> DraftRecord:
    prompt = Prompt(
        DRAFT_SYSTEM,
        draft_user(
            question.question,
            question.entity,
            snippet_payload(evidence.snippets),
            question.answer,
        ),
    )
    rubric_evidence = [s.as_evidence() for s in evidence.snippets]

    async def validate(data: Any) -> MetaRubric:
        return rubric_from_items(
            rubric_id=question.id,
            question=question.question,
            entity=question.entity,
            evidence=rubric_evidence,
            data=data,
        )

    meta, repairs = await call.ask(prompt, validate, rubric_items_schema())
    return DraftRecord(
        question_id=question.id,
        meta_rubric=meta,
        checklist=compile_rubric(meta),
        repairs=repairs,
        provenance=call.provenance(),
    )


async def _one(
    run: StageRun, question: AcceptedQuestion, evidence: EvidenceRecord | None
) -> DraftRecord | None:
    if evidence is None:
        return None  # the evidence stage recorded why
    inputs = {**question_inputs(question), "evidence": content_hash(list(evidence.snippets))}

    async def work(call: UnitCall) -> DraftRecord:
        return await _draft_one(call, question, evidence)

    return await run.unit(question.id, inputs, work, DraftRecord)


async def run_draft(session: BuildSession) -> StageReport:
    """Write ``draft/drafts.jsonl``: a validated meta-rubric and checklist per question."""
    workdir = session.workdir
    questions = workdir.read("accepted", AcceptedQuestion, missing_hint=ACCEPTED_HINT)
    evidence = {
        e.question_id: e
        for e in workdir.read(
            "evidence", EvidenceRecord, missing_hint="run `gamut build evidence` first"
        )
    }
    session.require_model("draft")
    run = session.stage("draft", DRAFT_VERSION)
    results = await asyncio.gather(*(_one(run, q, evidence.get(q.id)) for q in questions))
    drafts = [r for r in results if r is not None]
    path = workdir.write("drafts", drafts)
    skipped = sum(1 for q in questions if q.id not in evidence)
    notes = [f"{len(drafts)} rubric(s) drafted, {sum(d.repairs for d in drafts)} repair(s) used"]
    if skipped:
        notes.append(f"{skipped} question(s) have no evidence (see evidence/errors.jsonl)")
    return run.finish(units=len(questions), outputs={"drafts": path}, notes=tuple(notes))
