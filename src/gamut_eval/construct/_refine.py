"""Stage ``refine``: audit, independent search, rebuild as a verified superset, re-compile.

One round (the paper found a second changed little). The audit re-verifies every snippet
and flags partial coverage (``_audit.py``); the independent search re-researches the
question from scratch, told only what is missing, never shown the draft's items; the
rebuild gets the draft, the audit and the verified evidence, and its reply must validate
(problems are fed back); whatever it removed or changed of the rubric refined, beyond what
the audit allows, is restored and recorded (``_superset.py``), so the result is always a
verified superset. The rubric refined is a draft, or any rubric file (``_refine_input.py``):
refine's own output, or the annotation app's export after a human round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gamut_eval.construct._audit import PageCache, audit_draft, verify_snippets
from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._draft import snippet_payload
from gamut_eval.construct._errors import Invalid
from gamut_eval.construct._evidence import question_inputs
from gamut_eval.construct._fetch import Fetcher
from gamut_eval.construct._jsonschema import rebuild_reply_schema
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._models import StageReport
from gamut_eval.construct._prompts_rubric import REBUILD_SYSTEM, REFINE_VERSION, rebuild_user
from gamut_eval.construct._question_models import AcceptedQuestion
from gamut_eval.construct._refine_input import RefineUnit, app_row, refine_units
from gamut_eval.construct._research import gather_snippets, plan_queries
from gamut_eval.construct._rubric_check import grounding_errors, rubric_from_items
from gamut_eval.construct._rubric_models import Audit, DropReason, RefinedRecord, Snippet
from gamut_eval.construct._search import SearchProvider
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._settings import FetchSettings, ResearchSettings
from gamut_eval.construct._superset import enforce_superset, rubric_diff
from gamut_eval.construct._text import normalise
from gamut_eval.rubric import (
    Evidence,
    MetaRubric,
    RubricChange,
    checklist_edits,
    compile_rubric,
    diff_meta_rubrics,
)

__all__ = ["run_refine"]


def _gaps(draft: MetaRubric, audit: Audit) -> list[str]:
    """What the audit found missing, named by the lists' own names (not item ids)."""
    names = {item.id: getattr(item, "name", item.id) for item in draft.items}
    return [f"{names.get(flag.item, flag.item)}: {flag.missing}" for flag in audit.partial]


def _parse_dropped(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, list) or not all(
        isinstance(r, dict) and isinstance(r.get("item"), str) and isinstance(r.get("reason"), str)
        for r in raw
    ):
        raise Invalid(['`dropped` must be a list of {"item": ..., "reason": ...}'])
    return {r["item"]: r["reason"].strip() for r in raw}


Rebuilt = tuple[MetaRubric, list[DropReason], list[RubricChange]]


def _rebuild_validator(
    question: AcceptedQuestion, draft: MetaRubric, audit: Audit, evidence: list[Evidence]
) -> Callable[[Any], Awaitable[Rebuilt]]:
    allowed = {d.item: d for d in audit.drops_allowed}
    failed = {c.snippet_id for c in audit.flagged()}

    async def validate(data: Any) -> Rebuilt:
        dropped = _parse_dropped(data.get("dropped"))
        strangers = sorted(set(dropped) - {item.id for item in draft.items})
        if strangers:
            raise Invalid([f"`dropped` lists {s!r}, which is not a draft item" for s in strangers])
        meta = rubric_from_items(
            rubric_id=question.id,
            question=question.question,
            entity=question.entity,
            evidence=evidence,
            data=data,
        )
        kept = {item.id for item in meta.items}
        # An item whose every snippet failed goes even unlisted: restored, it would cite none.
        drops = {
            i
            for i, d in allowed.items()
            if i not in kept and (i in dropped or d.origin == "verification")
        }
        meta, restored = enforce_superset(draft, meta, drops, failed)
        errors = grounding_errors(meta)
        if errors:
            raise Invalid(errors)
        recorded = [_recorded(allowed[i], dropped.get(i, "")) for i in sorted(drops)]
        return meta, recorded, restored

    return validate


def _recorded(allowed: DropReason, why: str) -> DropReason:
    if not why or normalise(why) == normalise(allowed.reason):
        return allowed
    return allowed.model_copy(update={"reason": f"{allowed.reason} (rebuild: {why})"})


def _audit_payload(audit: Audit) -> dict[str, Any]:
    return {
        "snippets_failed_verification": [
            {"id": c.snippet_id, "status": c.status, "detail": c.detail} for c in audit.flagged()
        ],
        "partial_coverage": [f.model_dump() for f in audit.partial],
        "drops_allowed": [{"item": d.item, "reason": d.reason} for d in audit.drops_allowed],
    }


async def _research(
    call: UnitCall,
    question: AcceptedQuestion,
    draft: MetaRubric,
    audit: Audit,
    provider: SearchProvider,
    pages: PageCache,
    research: ResearchSettings,
) -> tuple[list[str], list[Snippet]]:
    """The independent search: new, verified snippets (``r1``...)."""
    queries = await plan_queries(call, question, research.max_queries, _gaps(draft, audit))
    found = await gather_snippets(
        provider,
        queries,
        per_query=research.per_query,
        max_snippets=research.max_snippets,
        prefix="r",
        known={normalise(e.text) for e in draft.evidence},
    )
    checks = await verify_snippets(pages, [s.as_evidence() for s in found])
    return queries, [s for s, c in zip(found, checks, strict=True) if c.verified]


async def _refine_one(
    call: UnitCall,
    unit: RefineUnit,
    provider: SearchProvider,
    pages: PageCache,
    research: ResearchSettings,
) -> RefinedRecord:
    question, before = unit.question, unit.before
    audit = await audit_draft(call, pages, before)
    queries, new = await _research(call, question, before, audit, provider, pages, research)
    failed = {c.snippet_id for c in audit.flagged()}
    evidence = [e for e in before.evidence if e.id not in failed] + [s.as_evidence() for s in new]
    items = [item.model_dump(mode="json", exclude_defaults=True) for item in before.items]
    shown = snippet_payload([Snippet(id=e.id, text=e.text, title=e.title) for e in evidence])
    prompt = Prompt(
        REBUILD_SYSTEM,
        rebuild_user(question.question, question.entity, items, _audit_payload(audit), shown),
    )
    validate = _rebuild_validator(question, before, audit, evidence)
    (after, dropped, restored), repairs = await call.ask(prompt, validate, rebuild_reply_schema())
    checklist = compile_rubric(after)
    return RefinedRecord(
        question_id=question.id,
        meta_rubric=after,
        checklist=checklist,
        audit=audit,
        queries=tuple(queries),
        new_snippets=tuple(new),
        dropped=tuple(dropped),
        diff=rubric_diff(before, after, unit.compiled, checklist, dropped),
        changes=tuple(diff_meta_rubrics(before, after)),
        restored=tuple(restored),
        repairs=repairs,
        provenance=call.provenance(),
    )


async def _one(
    run: StageRun,
    unit: RefineUnit | None,
    provider: SearchProvider,
    pages: PageCache,
    research: ResearchSettings,
) -> RefinedRecord | None:
    if unit is None:
        return None  # the draft stage recorded why
    inputs = {**question_inputs(unit.question), "draft": content_hash(unit.before)}

    async def work(call: UnitCall) -> RefinedRecord:
        return await _refine_one(call, unit, provider, pages, research)

    refined = await run.unit(unit.question.id, inputs, work, RefinedRecord)
    if refined is None or unit.revised is None:
        return refined
    edits = checklist_edits(unit.before, unit.revised, refined.meta_rubric)
    return refined.model_copy(update={"people_edits": tuple(edits)})


async def run_refine(
    session: BuildSession,
    provider: SearchProvider,
    fetcher: Fetcher | None = None,
    research: ResearchSettings | None = None,
    source: Path | None = None,
) -> StageReport:
    """Write ``refine/refined.jsonl`` (audited, re-researched, superset rubrics and their
    diffs) and ``refine/rubrics.jsonl`` (dataset records for the annotation app), refining
    the drafts or, with ``source``, the rubrics of that file."""
    workdir = session.workdir
    units = refine_units(workdir, source)
    research = research or ResearchSettings()
    session.require_model("refine")
    options = {"provider": provider.identity, **research.as_dict()}
    run = session.stage("refine", REFINE_VERSION, options)
    own_fetcher = fetcher is None
    local = provider.name == "local"
    pages = PageCache(fetcher or Fetcher(FetchSettings(allow_files=local)))
    try:
        results = await asyncio.gather(*(_one(run, u, provider, pages, research) for u in units))
    finally:
        if own_fetcher:
            await pages.fetcher.aclose()
    done = [(u, r) for u, r in zip(units, results, strict=True) if u is not None and r is not None]
    path = workdir.write("refined", [r for _, r in done])
    rubrics = workdir.file("refine_rubrics")
    rows = [app_row(u, r, rubrics.parent) for u, r in done]
    workdir.write_path(rubrics, rows, exclude_none=True)
    return run.finish(
        units=len(units),
        outputs={"refined": path, "rubrics": rubrics},
        notes=_notes([r for _, r in done]),
    )


def _notes(refined: list[RefinedRecord]) -> tuple[str, ...]:
    flagged = sum(len(r.audit.flagged()) for r in refined)
    partial = sum(len(r.audit.partial) for r in refined)
    added = sum(r.diff.count("added")[1] for r in refined)
    dropped = sum(r.diff.count("dropped")[1] for r in refined)
    notes = [
        f"{len(refined)} rubric(s) refined: {flagged} snippet(s) failed re-verification, "
        f"{partial} partly covered list(s)/process(es), checks +{added} -{dropped}",
    ]
    restored = [(r.question_id, c) for r in refined for c in r.restored]
    if restored:
        notes.append(
            f"{len(restored)} removal(s) or change(s) by the rebuild restored (it may only add):"
        )
        notes += [f"  {c.line()}" for _, c in restored[:20]]
    edits = [e for r in refined for e in r.people_edits]
    if edits:
        fits = sum(e.fits for e in edits)
        notes.append(
            f"{len(edits)} checklist edit(s) by people: {fits} still fit the refined rubric (the "
            f"annotation app re-applies them on import), {len(edits) - fits} do not (the "
            "refinement changed those checks):"
        )
        notes += [f"  {e.line()}" for e in edits if not e.fits][:20]
    return tuple(notes)
