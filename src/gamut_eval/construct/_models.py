"""The build's records and errors: what every stage reads and writes.

Every row a stage writes is one of these Pydantic models (or carries one), so a build folder
can be read back and checked field by field; nothing crosses modules as a raw dict. Token
usage is the project's one ``Usage`` (``gamut_eval._usage``). A unit that fails is recorded
and the others go on (``UnitError``); a run that cannot go on raises ``BuildError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from gamut_eval._usage import Usage
from gamut_eval.errors import GamutError
from gamut_eval.rubric import Checklist, ChecklistEdit, Evidence, MetaRubric, RubricChange, Text


class BuildError(GamutError):
    """The build cannot go on at all (rejected credentials, an unusable model or provider)."""


class UnitError(GamutError):
    """One unit of work (an image, a question) failed; the stage records it and goes on."""

    def __init__(
        self,
        kind: str,
        message: str,
        details: tuple[str, ...] = (),
        *,
        setting: str | None = None,
        reply: str | None = None,
    ) -> None:
        self.kind = kind
        self.message = message
        self.details = tuple(details)
        self.reply = reply
        """The model's last reply, when it sent one (what was rejected, cut or refused)."""
        super().__init__(message, setting=setting)


class Invalid(Exception):
    """A model reply that the caller's rules reject; ``errors`` are fed back to the model."""

    def __init__(self, errors: list[str], kind: str = "invalid") -> None:
        self.errors = errors
        self.kind = kind
        super().__init__("; ".join(errors))


class SearchError(GamutError):
    """A search request failed (after the provider's timeout or an error status)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: a short passage and where it came from."""

    text: str
    source: str | None
    title: str | None
    score: float = 0.0


class FrozenModel(BaseModel):
    """A record: immutable, no unknown fields, fields documented by their docstrings."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


STAGES: tuple[str, ...] = ("questions", "review", "evidence", "draft", "refine", "text-only")
"""The stages in pipeline order; each is a ``gamut build`` subcommand and a workdir folder."""

Popularity = Literal["head", "torso", "tail"]


class Provenance(FrozenModel):
    """Where an artefact came from: enough to reproduce it and to know when it is stale."""

    stage: str
    """The stage that made it."""
    model: str | None
    """The Inspect model that wrote it (``None`` when no model was involved)."""
    prompt_version: str | None
    """Version of the prompt template used; a new version never reuses cached results."""
    inputs: dict[str, str]
    """Content hash (sha256) of each input, by name (``image``, ``question``, ``draft``...)."""
    key: str
    """The cache key: a hash of stage, model, prompt version, inputs and options."""
    usage: Usage = Usage(calls=0)
    """Tokens spent making it (the first time; a cached artefact costs nothing again)."""


class StageError(FrozenModel):
    """A unit of work (one image or question) that failed; other units went on."""

    id: str
    """The image or question id."""
    stage: str
    """The stage it failed in."""
    kind: str
    """Short machine-readable kind: ``not-json``, ``invalid``, ``model-call``, ``search``..."""
    message: str
    """What went wrong, in words."""
    details: tuple[str, ...] = ()
    """The last validation errors, one per line, when the model's output was rejected."""
    reply: str | None = None
    """The model's last reply, when it sent one: what was rejected, cut off or refused."""
    setting: str | None = None
    """The build setting whose value is the fix, when one is (``max_tokens``)."""
    model: str | None = None
    """The model involved, if any."""
    prompt_version: str | None = None
    """The prompt version involved, if any."""
    inputs: dict[str, str] = {}
    """Content hashes of the unit's inputs."""
    usage: Usage = Usage(calls=0)
    """Tokens the failed attempts spent."""


class StageUsage(FrozenModel):
    """Token and cost accounting of one stage run (``<stage>/usage.json``): the run's
    ``Usage``, fresh and cached, with their costs and the run's settings."""

    stage: str
    """The stage."""
    model: str | None
    """The model used."""
    fresh: Usage
    """Spent in this run, failed units included."""
    cached: Usage
    """Recorded on the artefacts reused from the cache (not spent again)."""
    cost_usd: float | None
    """Cost of ``fresh``: the provider's reported cost, else the price table's; ``None``
    when neither knows the model."""
    cached_cost_usd: float | None
    """What the reused artefacts cost when they were made."""
    settings: dict[str, Any]
    """The settings of the run (repairs, concurrency, options), for the record."""


class StageReport(FrozenModel):
    """What a stage run did: counts, where it wrote, what failed, what to do next."""

    stage: str
    """The stage."""
    units: int
    """Units of work (images or questions) considered."""
    done: int
    """Units with a result (fresh or cached)."""
    cached: int
    """Of ``done``, how many came from the cache with no model call."""
    failed: int
    """Units that ended with a recorded error."""
    outputs: dict[str, str]
    """Files written, by name."""
    usage: StageUsage
    """Token and cost accounting."""
    errors: tuple[StageError, ...] = ()
    """The errors recorded (also in ``<stage>/errors.jsonl``)."""
    notes: tuple[str, ...] = ()
    """Status lines (``2 images await human review``)."""
    next_step: str | None = None
    """What to do next, when something other than the next stage is needed."""
    next_step_settings: tuple[str, ...] = ()
    """The settings ``next_step`` names (the command line adds their options)."""


class ImageRecord(FrozenModel):
    """One input image, resolved (``questions/images.jsonl``)."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
    """Image id; also the id of the question built for it."""
    image: str
    """Absolute path of the image file."""
    sha256: str
    """Content hash of the image bytes."""
    entity: str | None = None
    """Ground-truth entity, when the manifest gives it."""
    domain: str | None = None
    """Domain, e.g. ``food``."""
    popularity: Popularity | None = None
    """How well known the entity is."""
    metadata: dict[str, Any] = {}
    """Free-form fields from the manifest."""


class ManifestRow(FrozenModel):
    """One row of an image manifest."""

    image: str
    """Image path, relative to the manifest."""
    id: str | None = None
    """Id (default: the file name without its extension)."""
    entity: str | None = None
    """Ground-truth entity."""
    domain: str | None = None
    """Domain."""
    popularity: Popularity | None = None
    """``head``, ``torso`` or ``tail``."""
    metadata: dict[str, Any] = {}
    """Anything else."""


Requirement = Literal["stranger_test", "open_ended", "research", "natural", "grounded"]
REQUIREMENTS: tuple[str, ...] = get_args(Requirement)
"""The hard requirements of the LLM review (docs/method.md [B4]), the stranger test first."""

DecisionKind = Literal["accept", "revise", "discard"]


class Candidate(FrozenModel):
    """A candidate question for one image."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
    """``IMAGE-c1`` (generated), ``IMAGE-x<hash>`` (proposed in review), ``IMAGE-v<hash>``
    (a human revision); content-derived, so a rerun gives the same ids."""
    image_id: str
    """The image it is about."""
    question: Text
    """The question as a user would ask it, looking at the image."""
    origin: Literal["generated", "proposed", "revised"]
    """Generated by ``questions``, proposed by the review, or revised by a human."""
    aspect: str | None = None
    """What it asks about, in a few words (generated candidates)."""
    parent: str | None = None
    """The candidate a human revised into this one."""
    provenance: Provenance
    """The model call that wrote it; for a human revision, the decision it came from
    (``model`` ``None``, ``inputs.decision`` the decision's hash)."""


class Failure(FrozenModel):
    """A hard requirement a candidate fails, and why."""

    requirement: Requirement
    """Which requirement."""
    reason: Text
    """Why, in one or two sentences (for the stranger test: what it presupposes)."""


class CandidateReview(FrozenModel):
    """The LLM reviewer's verdict on one candidate."""

    candidate_id: str
    """The candidate."""
    passes: bool
    """True when it meets every hard requirement."""
    failures: tuple[Failure, ...] = ()
    """Requirements it fails (empty exactly when it passes)."""
    boilerplate: bool = False
    """A generic template that fits almost any entity of its kind."""


class ReviewCall(FrozenModel):
    """One review of the live candidates of an image (a cached unit)."""

    image_id: str
    """The image."""
    reviews: tuple[CandidateReview, ...]
    """One per live candidate."""
    ranking: tuple[str, ...]
    """Passing candidates, best first."""
    proposed: tuple[Candidate, ...] = ()
    """New candidates proposed because none was both passing and specific."""
    provenance: Provenance
    """The call."""


class Decision(FrozenModel):
    """A human decision on a candidate, as the annotation app exports it (one JSONL row)."""

    candidate_id: str = Field(validation_alias=AliasChoices("candidate_id", "question_id"))
    """The candidate (``question_id`` is accepted as another name for it)."""
    decision: DecisionKind
    """``accept``, ``revise`` (with ``revised_question``) or ``discard``."""
    revised_question: str | None = None
    """The revised wording; it re-enters the next round as a new candidate."""
    annotator: str | None = None
    """Who decided (provenance; adjudicated decisions name the adjudicator)."""
    round: int | None = None
    """Review round, when the app records it."""
    decided_at: str | None = None
    """When (ISO 8601), when the app records it."""
    comment: str | None = None
    """Free text."""
    metadata: dict[str, Any] = {}
    """Anything else the app exports."""

    @model_validator(mode="after")
    def _revision_text(self) -> Decision:
        revised = (self.revised_question or "").strip()
        if self.decision == "revise" and not revised:
            raise ValueError("a `revise` decision needs a non-empty `revised_question`")
        if self.decision != "revise" and self.revised_question is not None:
            raise ValueError("`revised_question` goes only with decision `revise`")
        return self


class CandidateState(FrozenModel):
    """A candidate with everything known about it (``review/candidates.jsonl``)."""

    candidate: Candidate
    """The candidate."""
    review: CandidateReview | None
    """The latest LLM review (``None`` if never reviewed, e.g. discarded first)."""
    decision: DecisionKind | None
    """The human decision, if any."""
    state: Literal[
        "chosen",
        "awaiting_human",
        "pending_review",
        "rejected_by_llm",
        "discarded",
        "revised",
        "not_chosen",
    ]
    """Where it stands (``pending_review``: proposed, not yet reviewed by the LLM)."""


class AnnotationTask(FrozenModel):
    """A candidate that passed the LLM review and awaits human decisions
    (``review/to_annotate.jsonl``, for the annotation app)."""

    candidate_id: str
    """The candidate; decisions refer to it by this id."""
    image_id: str
    """The image."""
    image: str
    """Absolute path of the image."""
    question: str
    """The candidate question."""
    origin: str
    """``generated``, ``proposed`` or ``revised``."""
    boilerplate: bool
    """The LLM found it generic (a weaker choice)."""
    rank: int | None
    """Its place in the LLM's ranking of the image's passing candidates (1 = best)."""


class ImageReview(FrozenModel):
    """Where one image stands after the review (``review/images.jsonl``)."""

    image_id: str
    """The image."""
    status: Literal["accepted", "awaiting_human", "needs_candidates", "error"]
    """``accepted``: a question passed the LLM and a human accepted it."""
    candidate_id: str | None = None
    """The chosen candidate, when accepted."""
    rounds: int = 0
    """LLM review rounds run for it in this run (cached ones included)."""
    message: str | None = None
    """Why it is not accepted yet, in words."""
    provenance: Provenance | None = None
    """The last review call (``None`` if no call succeeded)."""


class AcceptedQuestion(FrozenModel):
    """The image's question, accepted by the LLM review and by people
    (``review/accepted.jsonl``)."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
    """Question id (the image id)."""
    image_id: str
    """The image."""
    image: str
    """Absolute path of the image."""
    image_sha256: str
    """Content hash of the image."""
    question: Text
    """The question, asked with the image."""
    candidate_id: str
    """The candidate it came from."""
    entity: str | None = None
    """Ground-truth entity."""
    domain: str | None = None
    """Domain."""
    popularity: Popularity | None = None
    """Popularity band."""
    answer: str | None = None
    """A reference answer from an imported question set (``gamut build import``): a lead
    for the research and the draft, never evidence itself."""
    boilerplate: bool = False
    """Accepted although the reviewer found it generic (nothing better was accepted)."""
    provenance: Provenance
    """The review call that passed it."""


class TextOnlyRecord(FrozenModel):
    """The text-only version of a question (``text-only/text_only.jsonl``)."""

    question_id: str
    """The question."""
    question: str
    """The question as asked with the image."""
    question_text_only: Text
    """The same question with the entity named in text."""
    entity: str
    """The entity it names."""
    check: str
    """The checker's reason for finding that both ask the same thing."""
    repairs: int = 0
    """Rewrites needed before it passed the checks."""
    provenance: Provenance
    """The calls that wrote and checked it."""


class Snippet(FrozenModel):
    """A short passage found by a search provider, with where it came from."""

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


class EvidenceRecord(FrozenModel):
    """The snippets gathered for one question (``evidence/evidence.jsonl``)."""

    question_id: str
    """The question."""
    queries: tuple[str, ...]
    """The search queries run."""
    snippets: tuple[Snippet, ...]
    """The snippets kept, in order, de-duplicated."""
    provenance: Provenance
    """Model (query planning), provider and inputs."""


class DraftRecord(FrozenModel):
    """A drafted meta-rubric and its compiled checklist (``draft/drafts.jsonl``)."""

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


class SnippetCheck(FrozenModel):
    """The audit's re-verification of one snippet against its fetched source."""

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


class CoverageFlag(FrozenModel):
    """A list or process the evidence covers only partly."""

    item: str
    """The item id."""
    missing: Text
    """What evidence is missing."""


class DropReason(FrozenModel):
    """Why an item may be (or was) dropped from the refined rubric."""

    item: str
    """The item id."""
    reason: Text
    """The recorded reason."""
    origin: Literal["audit", "verification"]
    """``audit``: the LLM audit proposed it; ``verification``: every snippet it cites
    failed re-verification."""


class Audit(FrozenModel):
    """The audit of a draft: snippets re-verified, partial coverage, allowed drops."""

    snippets: tuple[SnippetCheck, ...]
    """One check per draft snippet."""
    partial: tuple[CoverageFlag, ...] = ()
    """Lists and processes the evidence covers only partly."""
    drops_allowed: tuple[DropReason, ...] = ()
    """Items the rebuild may drop, each with its reason; no other item may go."""

    def flagged(self) -> list[SnippetCheck]:
        """Snippets that failed re-verification."""
        return [c for c in self.snippets if not c.verified]


class ItemChange(FrozenModel):
    """One meta-rubric item added, changed or dropped by refinement."""

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


class CheckChange(FrozenModel):
    """One compiled check added, changed or dropped by refinement."""

    check: str
    """The check id."""
    change: Literal["added", "changed", "dropped"]
    """What happened to it."""
    before: str | None = None
    """Text and tier before (``[AC] ...``), when it existed."""
    after: str | None = None
    """Text and tier after, when it exists."""


class RubricDiff(FrozenModel):
    """Draft -> refined, for items and for compiled checks."""

    items: tuple[ItemChange, ...]
    """Item changes (unchanged items are not listed)."""
    checks: tuple[CheckChange, ...]
    """Check changes (unchanged checks are not listed)."""

    def count(self, change: str) -> tuple[int, int]:
        """(items, checks) with the given change."""
        items = sum(1 for c in self.items if c.change == change)
        return items, sum(1 for c in self.checks if c.change == change)


class RefinedRecord(FrozenModel):
    """A refined meta-rubric: a verified superset of the rubric refined, a draft or a
    revised rubric (``refine/refined.jsonl``)."""

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
