"""The audit of a draft (refinement, phase 1).

Every snippet is re-verified against its fetched source (verbatim or fuzzy, else flagged);
an item whose every citation failed is flagged as unsupported and may be dropped; the model
then flags lists and processes the evidence covers only partly and proposes drops, each
with a reason. Only the drops recorded here may happen in the rebuild.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from gamut_eval.construct._errors import Invalid
from gamut_eval.construct._fetch import FetchedPage, Fetcher, FetchError
from gamut_eval.construct._jsonschema import object_schema
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._prompts_rubric import AUDIT_SYSTEM, audit_user
from gamut_eval.construct._rubric_check import element_cites
from gamut_eval.construct._rubric_models import Audit, CoverageFlag, DropReason, SnippetCheck
from gamut_eval.construct._session import UnitCall
from gamut_eval.construct._verify import match_snippet
from gamut_eval.rubric import (
    Evidence,
    FlexibleListItem,
    Item,
    MetaRubric,
    ProcessItem,
    StrictListItem,
)

__all__ = ["PageCache", "audit_draft", "verify_snippets"]

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
    if not snippet.source:
        return SnippetCheck(snippet_id=snippet.id, source=None, status="no_source")
    try:
        page = await pages.get(snippet.source)
    except FetchError as exc:
        return SnippetCheck(
            snippet_id=snippet.id, source=snippet.source, status="unreachable", detail=str(exc)
        )
    status, score, detail = match_snippet(snippet.text, page)
    return SnippetCheck(
        snippet_id=snippet.id, source=snippet.source, status=status, score=score, detail=detail
    )


async def verify_snippets(pages: PageCache, snippets: Sequence[Evidence]) -> list[SnippetCheck]:
    """Each snippet re-verified against its source, in order."""
    return list(await asyncio.gather(*(_verify(pages, s) for s in snippets)))


def _all_cites(item: Item) -> set[str]:
    cites = set(item.cites) | {c for group in element_cites(item) for c in group}
    if isinstance(item, StrictListItem | FlexibleListItem | ProcessItem):
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


_CONTAINERS = (StrictListItem, FlexibleListItem, ProcessItem)


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
