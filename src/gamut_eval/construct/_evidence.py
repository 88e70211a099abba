"""Stage ``evidence``: short snippets with sources for every accepted question.

The model (optional) plans keyword queries; the search provider answers them; hits are
de-duplicated and numbered ``s1``, ``s2``... A question with no hit at all ends with a
recorded error: a rubric must be grounded in evidence, not in the drafting model's memory.
"""

from __future__ import annotations

import asyncio

from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._errors import UnitError
from gamut_eval.construct._models import StageReport
from gamut_eval.construct._prompts_rubric import EVIDENCE_VERSION
from gamut_eval.construct._question_models import AcceptedQuestion
from gamut_eval.construct._research import default_queries, gather_snippets, plan_queries
from gamut_eval.construct._rubric_models import EvidenceRecord
from gamut_eval.construct._search import SearchProvider
from gamut_eval.construct._session import BuildSession, UnitCall
from gamut_eval.construct._settings import ResearchSettings

__all__ = ["question_inputs", "run_evidence"]

ACCEPTED_HINT = (
    "run `gamut build review` first; questions reach later stages once the LLM review and "
    "human decisions accept them"
)


def question_inputs(question: AcceptedQuestion) -> dict[str, str]:
    """Content hashes of a question as the rubric stages see it."""
    facts = {"question": question.question, "entity": question.entity}
    inputs = {"question": content_hash(facts), "image": question.image_sha256}
    if question.answer is not None:  # imported questions only: other keys stay as they were
        inputs["answer"] = content_hash(question.answer)
    return inputs


async def _gather(
    call: UnitCall,
    question: AcceptedQuestion,
    provider: SearchProvider,
    research: ResearchSettings,
    plan: bool,
) -> EvidenceRecord:
    if plan:
        queries = await plan_queries(call, question, research.max_queries)
    else:
        queries = default_queries(question)
    snippets = await gather_snippets(
        provider,
        queries,
        per_query=research.per_query,
        max_snippets=research.max_snippets,
        prefix="s",
    )
    if not snippets:
        raise UnitError("no-evidence", f"no search hit for any of {len(queries)} queries")
    return EvidenceRecord(
        question_id=question.id,
        queries=tuple(queries),
        snippets=tuple(snippets),
        provenance=call.provenance(),
    )


async def run_evidence(
    session: BuildSession,
    provider: SearchProvider,
    research: ResearchSettings | None = None,
) -> StageReport:
    """Write ``evidence/evidence.jsonl``: the snippets of every accepted question.

    With a model the queries are planned by it; without one (offline, cheap) they are the
    entity with the question, and the entity alone.
    """
    research = research or ResearchSettings()
    workdir = session.workdir
    questions = workdir.read("accepted", AcceptedQuestion, missing_hint=ACCEPTED_HINT)
    plan = session.model is not None
    options = {"provider": provider.identity, **research.as_dict()}
    run = session.stage("evidence", EVIDENCE_VERSION if plan else None, options)

    async def one(question: AcceptedQuestion) -> EvidenceRecord | None:
        async def work(call: UnitCall) -> EvidenceRecord:
            return await _gather(call, question, provider, research, plan)

        return await run.unit(question.id, question_inputs(question), work, EvidenceRecord)

    results = await asyncio.gather(*(one(q) for q in questions))
    records = [r for r in results if r is not None]
    path = workdir.write("evidence", records)
    count = sum(len(r.snippets) for r in records)
    notes = (f"{count} snippets for {len(records)} of {len(questions)} question(s)",)
    return run.finish(units=len(questions), outputs={"evidence": path}, notes=notes)
