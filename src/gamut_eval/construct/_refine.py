"""The ``refine`` stage: audit, independent search, rebuild as a verified superset,
re-compile. One round (the paper found a second changed little).

The input is the build folder's drafts (the default), or any file of rubrics
(``_rubrics``): drafts, refine's own output (``refine/refined.jsonl`` or
``refine/rubrics.jsonl``), a dataset, or the annotation app's export after a human round,
whose rows carry people's revised checklist. Each question is taken from the build folder's
accepted questions when it has them, else from the row itself (its question, entity and
image).

The audit (``audit_draft``) re-verifies every snippet against its fetched source (verbatim
or fuzzy, else flagged); an item whose every citation failed is flagged as unsupported and
may be dropped; the model then flags lists and processes the evidence covers only partly
and proposes drops, each with a reason. Only the drops recorded there may happen in the
rebuild. The independent search re-researches the question from scratch, told only what is
missing, never shown the draft's items. The rebuild gets the draft, the audit and the
verified evidence, and its reply must validate (problems are fed back); whatever it removed
or changed of the rubric refined, beyond what the audit allows, is restored and recorded
(``enforce_superset``), so the result is always a verified superset.

``refine/rubrics.jsonl`` holds one dataset record per refined rubric, which ``gamut
annotate import`` reads to open the next round. It carries no ``checklist``: the app
re-compiles the refined meta-rubric and re-applies the previous round's edits wherever the
refinement left that check as it was. People's revised checklist travels along in
``metadata.refine.revised_checklist``, and ``metadata.refine.people_edits`` lists each of
their edits and whether it still fits the refined rubric.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from gamut_eval._files import image_inside
from gamut_eval.construct._evidence import (
    ACCEPTED_HINT,
    gather_snippets,
    plan_queries,
    question_inputs,
    snippet_payload,
)
from gamut_eval.construct._llm import Prompt, object_schema, rebuild_reply_schema
from gamut_eval.construct._models import (
    AcceptedQuestion,
    Audit,
    CoverageFlag,
    DraftRecord,
    DropReason,
    Invalid,
    RefinedRecord,
    Snippet,
    SnippetCheck,
    StageReport,
)
from gamut_eval.construct._prompts import (
    AUDIT_SYSTEM,
    REBUILD_SYSTEM,
    REFINE_VERSION,
    audit_user,
    rebuild_user,
)
from gamut_eval.construct._rubrics import (
    RubricRow,
    element_cites,
    enforce_superset,
    grounding_errors,
    read_rubric_file,
    row_image,
    row_question,
    rubric_diff,
    rubric_from_items,
)
from gamut_eval.construct._search import SearchProvider
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._settings import FetchSettings, ResearchSettings
from gamut_eval.construct._sources import (
    FetchedPage,
    Fetcher,
    FetchError,
    match_snippet,
)
from gamut_eval.construct._text import normalise
from gamut_eval.construct._workdir import DATASET_FIELDS, Workdir, content_hash
from gamut_eval.dataset import DatasetRecord
from gamut_eval.rubric import (
    Checklist,
    Evidence,
    FlexibleListItem,
    Item,
    MetaRubric,
    ProcessItem,
    RubricChange,
    StrictListItem,
    checklist_edits,
    compile_rubric,
    diff_meta_rubrics,
)


@dataclass(frozen=True)
class RefineUnit:
    """One question to refine."""

    question: AcceptedQuestion
    before: MetaRubric
    """The rubric refined."""
    revised: Checklist | None = None
    """People's revised checklist, when the row brings one that differs from the compiled."""
    row: RubricRow | None = None
    """The input row (``None``: the build folder's drafts)."""


def _revised(row: RubricRow) -> Checklist | None:
    if row.kind != "dataset" or row.checklist is None:
        return None
    return None if row.checklist == compile_rubric(row.meta) else row.checklist


def refine_units(workdir: Workdir, source: Path | None) -> list[RefineUnit | None]:
    """The questions to refine, in order (``None``: an accepted question with no draft)."""
    accepted = workdir.read_optional("accepted", AcceptedQuestion)
    if source is None:
        questions = workdir.read("accepted", AcceptedQuestion, missing_hint=ACCEPTED_HINT)
        drafts = {
            d.question_id: d
            for d in workdir.read(
                "drafts",
                DraftRecord,
                missing_hint="run `gamut build draft` first, or give the rubrics to refine as "
                "source",
                setting="source",
            )
        }
        return [
            RefineUnit(q, drafts[q.id].meta_rubric) if q.id in drafts else None for q in questions
        ]
    known = {q.id: q for q in accepted}
    rows = read_rubric_file(source)
    # A dataset row states its own question (with people's entity corrections, if any).
    return [
        RefineUnit(
            (known.get(row.id) if row.kind != "dataset" else None)
            or row_question(row, f"{source}:{row.line}"),
            row.meta,
            _revised(row),
            row,
        )
        for row in rows.values()
    ]


def _relative(image: str | Path | None, folder: Path) -> str | None:
    return None if not image else image_inside(image, folder)


def _refine_meta(unit: RefineUnit, refined: RefinedRecord) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "rubric": refined.provenance.key,
        "model": refined.provenance.model,
        "prompt_version": refined.provenance.prompt_version,
        "input": unit.row.kind if unit.row is not None else "draft",
        "restored": [c.path for c in refined.restored],
        "dropped": [{"item": d.item, "reason": d.reason} for d in refined.dropped],
    }
    if unit.revised is not None:
        meta["revised_checklist"] = unit.revised.model_dump(mode="json")
        meta["people_edits"] = [e.model_dump(mode="json") for e in refined.people_edits]
    return meta


def app_row(unit: RefineUnit, refined: RefinedRecord, folder: Path) -> DatasetRecord:
    """The dataset record the annotation app imports for the next round (no checklist)."""
    question, record = unit.question, unit.row.record if unit.row is not None else None
    image = row_image(unit.row) if unit.row is not None and record is not None else None
    fields: dict[str, Any] = {
        **question.model_dump(include=DATASET_FIELDS),
        "image": _relative(image or question.image, folder),
        "metadata": {},
    }
    if question.provenance.stage != "input":  # an accepted question of the build folder
        fields["metadata"] = {"build": {"candidate_id": question.candidate_id}}
    if record is not None:
        fields.update(record.model_dump(exclude={"meta_rubric", "checklist", "image"}))
        fields["image"] = _relative(image, folder)
    fields["metadata"] = {**fields["metadata"], "refine": _refine_meta(unit, refined)}
    return DatasetRecord.model_validate(
        {**fields, "meta_rubric": refined.meta_rubric, "checklist": None}
    )


_SCHEMA = object_schema(
    {
        "partial": {
            "type": "array",
            "items": object_schema({"item": {"type": "string"}, "missing": {"type": "string"}}),
        },
        "drop": {
            "type": "array",
            "items": object_schema({"item": {"type": "string"}, "reason": {"type": "string"}}),
        },
    }
)


class PageCache:
    """Sources fetched once per run, shared by every question that cites them."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher
        self._pages: dict[str, asyncio.Task[FetchedPage]] = {}

    async def get(self, source: str) -> FetchedPage:
        if source not in self._pages:
            self._pages[source] = asyncio.ensure_future(self.fetcher.fetch(source))
        return await asyncio.shield(self._pages[source])


async def _verify(pages: PageCache, snippet: Evidence) -> SnippetCheck:
    check = partial(SnippetCheck, snippet_id=snippet.id, source=snippet.source or None)
    if not snippet.source:
        return check(status="no_source")
    try:
        page = await pages.get(snippet.source)
    except FetchError as exc:
        return check(status="unreachable", detail=str(exc))
    status, score, detail = match_snippet(snippet.text, page)
    return check(status=status, score=score, detail=detail)


async def verify_snippets(pages: PageCache, snippets: Sequence[Evidence]) -> list[SnippetCheck]:
    """Each snippet re-verified against its source, in order."""
    return list(await asyncio.gather(*(_verify(pages, s) for s in snippets)))


_CONTAINERS = (StrictListItem, FlexibleListItem, ProcessItem)


def _all_cites(item: Item) -> set[str]:
    cites = set(item.cites) | {c for group in element_cites(item) for c in group}
    if isinstance(item, _CONTAINERS):
        cites |= {c for m in item.meta_insights for c in m.cites}
    return cites


def unsupported(meta: MetaRubric, failed: set[str]) -> list[DropReason]:
    """Items whose every citation failed re-verification."""
    drops = []
    for item in meta.items:
        cites = _all_cites(item)
        if cites and cites <= failed:
            listed = ", ".join(sorted(cites))
            drops.append(
                DropReason(
                    item=item.id,
                    reason=f"every snippet it cites ({listed}) failed re-verification",
                    origin="verification",
                )
            )
    return drops


def _pair(row: Any, field: str) -> tuple[Any, Any]:
    return (row.get("item"), row.get(field)) if isinstance(row, dict) else (None, None)


def _flags(rows: list[Any], items: dict[str, Item], errors: list[str]) -> list[CoverageFlag]:
    flags = []
    for i, row in enumerate(rows):
        item, text = _pair(row, "missing")
        if not isinstance(items.get(str(item)), _CONTAINERS):
            errors.append(f"partial[{i}].item: {item!r} is not a list or process of the draft")
        elif not isinstance(text, str) or not text.strip():
            errors.append(f"partial[{i}].missing: say what evidence is missing")
        else:
            flags.append(CoverageFlag(item=str(item), missing=text.strip()))
    return flags


def _drops(rows: list[Any], items: dict[str, Item], errors: list[str]) -> list[DropReason]:
    drops = []
    for i, row in enumerate(rows):
        item, text = _pair(row, "reason")
        if str(item) not in items:
            errors.append(f"drop[{i}].item: {item!r} is not an item of the draft")
        elif not isinstance(text, str) or not text.strip():
            errors.append(f"drop[{i}].reason: a drop needs a reason")
        else:
            drops.append(DropReason(item=str(item), reason=text.strip(), origin="audit"))
    return drops


AuditReply = tuple[list[CoverageFlag], list[DropReason]]


def _validator(meta: MetaRubric) -> Callable[[Any], Awaitable[AuditReply]]:
    items = {item.id: item for item in meta.items}

    async def validate(data: Any) -> AuditReply:
        missing = [f"`{key}` is missing (an empty list says none)" for key in ("partial", "drop")
                   if key not in data]  # fmt: skip
        if missing:  # a field the model left out is not a field it found empty
            raise Invalid(missing)
        partial, drops = data["partial"], data["drop"]
        if not isinstance(partial, list) or not isinstance(drops, list):
            raise Invalid(["`partial` and `drop` must be lists"])
        errors: list[str] = []
        reply = _flags(partial, items, errors), _drops(drops, items, errors)
        if errors:
            raise Invalid(errors)
        return reply

    return validate


async def audit_draft(call: UnitCall, pages: PageCache, draft: MetaRubric) -> Audit:
    """Re-verify the snippets, then ask the model for partial coverage and drops."""
    checks = await verify_snippets(pages, draft.evidence)
    status = {c.snippet_id: c.status for c in checks}
    shown = [
        {"id": e.id, "title": e.title, "text": e.text, "verification": status[e.id]}
        for e in draft.evidence
    ]
    items = [item.model_dump(mode="json", exclude_defaults=True) for item in draft.items]
    prompt = Prompt(AUDIT_SYSTEM, audit_user(draft.question, items, shown))
    partial, drops = (await call.ask(prompt, _validator(draft), _SCHEMA))[0]
    failed = {c.snippet_id for c in checks if not c.verified}
    allowed = {d.item: d for d in drops}
    for drop in unsupported(draft, failed):
        allowed.setdefault(drop.item, drop)
    return Audit(
        snippets=tuple(checks), partial=tuple(partial), drops_allowed=tuple(allowed.values())
    )


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
    known = {normalise(e.text) for e in draft.evidence}
    found = await gather_snippets(provider, queries, research, "r", known)
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
        diff=rubric_diff(before, after, compile_rubric(before), checklist, dropped),
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
    work = partial(_refine_one, unit=unit, provider=provider, pages=pages, research=research)
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
