"""Artefacts of the rubric stages: evidence, drafts, the audit, the diff, refined rubrics."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from gamut_eval.construct._models import FROZEN, Provenance
from gamut_eval.rubric import Checklist, ChecklistEdit, Evidence, MetaRubric, RubricChange, Text

__all__ = [
    "Audit",
    "CheckChange",
    "CoverageFlag",
    "DraftRecord",
    "DropReason",
    "EvidenceRecord",
    "ItemChange",
    "RefinedRecord",
    "RubricDiff",
    "Snippet",
    "SnippetCheck",
]


class Snippet(BaseModel):
    """A short passage found by a search provider, with where it came from."""

    model_config = FROZEN

    id: Text
    """Unique within the question (``s1``...; ``r1``... from the independent search)."""
    text: Text
    """The passage, as the provider returned it."""
    source: str | None = None
    """URL (``https://``, ``file://``) the audit fetches to re-verify the passage."""
    title: str | None = None
    """Title of the source."""
    query: str = ""
    """The query that found it."""
    provider: str = ""
    """The search provider (``local``, ``tavily``, ``brave``)."""

    def as_evidence(self) -> Evidence:
        """The meta-rubric's evidence entry for this snippet."""
        return Evidence(id=self.id, text=self.text, source=self.source, title=self.title)


class EvidenceRecord(BaseModel):
    """The snippets gathered for one question (``evidence/evidence.jsonl``)."""

    model_config = FROZEN

    question_id: str
    """The question."""
    queries: tuple[str, ...]
    """The search queries run."""
    snippets: tuple[Snippet, ...]
    """The snippets kept, in order, de-duplicated."""
    provenance: Provenance
    """Model (query planning), provider and inputs."""


class DraftRecord(BaseModel):
    """A drafted meta-rubric and its compiled checklist (``draft/drafts.jsonl``)."""

    model_config = FROZEN

    question_id: str
    """The question."""
    meta_rubric: MetaRubric
    """The validated meta-rubric; every item cites the evidence."""
    checklist: Checklist
    """Its compiled checklist."""
    repairs: int = 0
    """How many times validation errors were fed back before it validated."""
    provenance: Provenance
    """The drafting call(s)."""


class SnippetCheck(BaseModel):
    """The audit's re-verification of one snippet against its fetched source."""

    model_config = FROZEN

    snippet_id: str
    """The snippet."""
    source: str | None
    """Where it was fetched from."""
    status: Literal["verbatim", "fuzzy", "not_found", "unreachable", "no_source"]
    """``verbatim``/``fuzzy``: found; anything else is flagged."""
    score: float | None = None
    """Share of the snippet's word trigrams found in the source (fuzzy matching)."""
    detail: str | None = None
    """Why it is flagged (the fetch error, a truncated page...)."""

    @property
    def verified(self) -> bool:
        return self.status in ("verbatim", "fuzzy")


class CoverageFlag(BaseModel):
    """A list or process the evidence covers only partly."""

    model_config = FROZEN

    item: str
    """The item id."""
    missing: Text
    """What evidence is missing."""


class DropReason(BaseModel):
    """Why an item may be (or was) dropped from the refined rubric."""

    model_config = FROZEN

    item: str
    """The item id."""
    reason: Text
    """The recorded reason."""
    origin: Literal["audit", "verification"]
    """``audit``: the LLM audit proposed it; ``verification``: every snippet it cites
    failed re-verification."""


class Audit(BaseModel):
    """The audit of a draft: snippets re-verified, partial coverage, allowed drops."""

    model_config = FROZEN

    snippets: tuple[SnippetCheck, ...]
    """One check per draft snippet."""
    partial: tuple[CoverageFlag, ...] = ()
    """Lists and processes the evidence covers only partly."""
    drops_allowed: tuple[DropReason, ...] = ()
    """Items the rebuild may drop, each with its reason; no other item may go."""

    def flagged(self) -> list[SnippetCheck]:
        """Snippets that failed re-verification."""
        return [c for c in self.snippets if not c.verified]


class ItemChange(BaseModel):
    """One meta-rubric item added, changed or dropped by refinement."""

    model_config = FROZEN

    item: str
    """The item id."""
    change: Literal["added", "changed", "dropped"]
    """What happened to it."""
    fields: tuple[str, ...] = ()
    """For ``changed``: the fields that differ (``cites`` included)."""
    elements_added: tuple[str, ...] = ()
    """List options, items, steps or aspects added to it."""
    reason: str | None = None
    """For ``dropped``: the recorded reason."""


class CheckChange(BaseModel):
    """One compiled check added, changed or dropped by refinement."""

    model_config = FROZEN

    check: str
    """The check id."""
    change: Literal["added", "changed", "dropped"]
    """What happened to it."""
    before: str | None = None
    """Text and tier before (``[AC] ...``), when it existed."""
    after: str | None = None
    """Text and tier after, when it exists."""


class RubricDiff(BaseModel):
    """Draft -> refined, for items and for compiled checks."""

    model_config = FROZEN

    items: tuple[ItemChange, ...]
    """Item changes (unchanged items are not listed)."""
    checks: tuple[CheckChange, ...]
    """Check changes (unchanged checks are not listed)."""

    def count(self, change: str) -> tuple[int, int]:
        """(items, checks) with the given change."""
        items = sum(1 for c in self.items if c.change == change)
        return items, sum(1 for c in self.checks if c.change == change)


class RefinedRecord(BaseModel):
    """A refined meta-rubric: a verified superset of the rubric refined, a draft or a
    revised rubric (``refine/refined.jsonl``)."""

    model_config = FROZEN

    question_id: str
    """The question."""
    meta_rubric: MetaRubric
    """The refined meta-rubric; its evidence holds only re-verified snippets."""
    checklist: Checklist
    """Its compiled checklist."""
    audit: Audit
    """What the audit found."""
    queries: tuple[str, ...]
    """The independent search's queries."""
    new_snippets: tuple[Snippet, ...]
    """Snippets the independent search found and verified."""
    dropped: tuple[DropReason, ...] = ()
    """Draft items dropped, each with its recorded reason."""
    diff: RubricDiff
    """Draft -> refined, by item and by compiled check."""
    changes: tuple[RubricChange, ...] = ()
    """Draft -> refined, every difference with its path (additions, the audit's drops)."""
    restored: tuple[RubricChange, ...] = ()
    """What the rebuild removed or changed that was put back (it may only add)."""
    people_edits: tuple[ChecklistEdit, ...] = ()
    """People's edits of the checklist of the rubric refined (a human-revised input), each
    saying whether it still fits the refined rubric."""
    repairs: int = 0
    """Validation rounds fed back before the rebuild validated."""
    provenance: Provenance
    """The audit, search and rebuild calls."""
