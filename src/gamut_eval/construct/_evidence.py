"""Evidence and the draft grounded in it: research shared by ``evidence`` and ``refine``
(plan queries, search, keep snippets), the ``evidence`` stage, and the ``draft`` stage.

Stage ``evidence``: short snippets with sources for every accepted question. The model
(optional) plans keyword queries; the search provider answers them; hits are de-duplicated
and numbered ``s1``, ``s2``... A question with no hit at all ends with a recorded error: a
rubric must be grounded in evidence, not in the drafting model's memory.

Stage ``draft``: a meta-rubric grounded in the snippets, validated, then compiled. The model
writes the items as structured output (the meta-rubric's JSON Schema); the reply is
validated by the project's validator plus the grounding rule, and the errors are fed back
for a bounded number of repairs. A rubric still invalid after that ends the question's draft
with a recorded error (``draft/errors.jsonl``); the other questions go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from gamut_eval.construct._llm import Prompt, object_schema, rubric_items_schema
from gamut_eval.construct._models import (
    AcceptedQuestion,
    DraftRecord,
    EvidenceRecord,
    Invalid,
    SearchError,
    Snippet,
    StageReport,
    UnitError,
)
from gamut_eval.construct._prompts import (
    DRAFT_SYSTEM,
    DRAFT_VERSION,
    EVIDENCE_VERSION,
    QUERIES_SYSTEM,
    draft_user,
    queries_user,
)
from gamut_eval.construct._rubrics import rubric_from_items
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._settings import ResearchSettings
from gamut_eval.construct._text import normalise
from gamut_eval.construct._workdir import content_hash, data_url
from gamut_eval.rubric import MetaRubric, compile_rubric

if TYPE_CHECKING:
    from gamut_eval.construct._search import SearchProvider

MAX_QUERY_CHARS = 200

_SCHEMA = object_schema({"queries": {"type": "array", "items": {"type": "string"}}})


def default_queries(question: AcceptedQuestion) -> list[str]:
    """Queries without a model: the entity with the question, and the entity alone (and,
    for an imported question with a reference answer, the entity with the answer)."""
    if not question.entity:
        queries = [question.question]
    else:
        queries = [f"{question.entity} {question.question}", question.entity]
    if question.answer:
        queries.append(f"{question.entity or question.question} {question.answer}"[:200])
    return queries


def _validator(max_queries: int) -> Callable[[Any], Awaitable[list[str]]]:
    async def validate(data: Any) -> list[str]:
        raw = data.get("queries")
        if not isinstance(raw, list) or not raw or not all(isinstance(q, str) for q in raw):
            raise Invalid(["`queries` must be a non-empty list of strings"])
        queries = list(dict.fromkeys(q.strip() for q in raw if q.strip()))[:max_queries]
        errors = [
            f"queries[{i}]: longer than {MAX_QUERY_CHARS} characters; use keywords"
            for i, q in enumerate(queries)
            if len(q) > MAX_QUERY_CHARS
        ]
        if not queries:
            errors.append("every query is empty")
        if errors:
            raise Invalid(errors)
        return queries

    return validate


async def plan_queries(
    call: UnitCall, question: AcceptedQuestion, max_queries: int, gaps: list[str] | None = None
) -> list[str]:
    """Search queries written by the model (it sees the image only when the entity is
    unknown: then the image is the only way to know what to search for)."""
    images = () if question.entity else (data_url(question.image),)
    prompt = Prompt(
        QUERIES_SYSTEM,
        queries_user(question.question, question.entity, max_queries, gaps),
        images,
    )
    queries, _ = await call.ask(prompt, _validator(max_queries), _SCHEMA)
    return queries


async def gather_snippets(
    provider: SearchProvider,
    queries: list[str],
    research: ResearchSettings,
    prefix: str,
    known: set[str] | None = None,
) -> list[Snippet]:
    """Hits of every query, de-duplicated by text (and against ``known`` texts), in query
    order, numbered ``<prefix>1``, ``<prefix>2``..."""
    seen = set(known or ())
    snippets: list[Snippet] = []
    for query in queries:
        try:
            hits = await provider.search(query, research.per_query)
        except SearchError as exc:
            raise UnitError("search", str(exc)) from exc
        for hit in hits:
            key = normalise(hit.text)
            if key in seen or len(snippets) >= research.max_snippets:
                continue
            seen.add(key)
            snippets.append(
                Snippet(
                    id=f"{prefix}{len(snippets) + 1}",
                    text=hit.text,
                    source=hit.source,
                    title=hit.title,
                    query=query,
                    provider=provider.name,
                )
            )
    return snippets


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
    snippets = await gather_snippets(provider, queries, research, "s")
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
        work = partial(_gather, question=question, provider=provider, research=research, plan=plan)
        return await run.unit(question.id, question_inputs(question), work, EvidenceRecord)

    results = await asyncio.gather(*(one(q) for q in questions))
    records = [r for r in results if r is not None]
    path = workdir.write("evidence", records)
    count = sum(len(r.snippets) for r in records)
    notes = (f"{count} snippets for {len(records)} of {len(questions)} question(s)",)
    return run.finish(units=len(questions), outputs={"evidence": path}, notes=notes)


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
    work = partial(_draft_one, question=question, evidence=evidence)
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
    run = session.stage("draft", DRAFT_VERSION)
    results = await asyncio.gather(*(_one(run, q, evidence.get(q.id)) for q in questions))
    drafts = [r for r in results if r is not None]
    path = workdir.write("drafts", drafts)
    skipped = sum(1 for q in questions if q.id not in evidence)
    notes = [f"{len(drafts)} rubric(s) drafted, {sum(d.repairs for d in drafts)} repair(s) used"]
    if skipped:
        notes.append(f"{skipped} question(s) have no evidence (see evidence/errors.jsonl)")
    return run.finish(units=len(questions), outputs={"drafts": path}, notes=tuple(notes))
