"""The compiled, flat binary checklist: what a judge grades and what is scored, and the
fixed rules that turn a meta-rubric into one (docs/method.md [C1]-[C15]).

Checks fall into two groups: the genuine requirement keeps its item's tier; secondary
checks (optional elements, higher coverage, optional steps, the full ordering) drop one
tier, and Context has no tier beneath it.

Also here: the checklist as Markdown for people, and people's edits of a compiled
checklist. Annotators revise the binary checklist, not the meta-rubric. When the
meta-rubric is then refined again, each edit (a check removed, its text or tier changed, a
check added) can be re-applied to the refined rubric's compiled checklist only where the
refinement left that check as it was; ``checklist_edits`` names every edit and says which
(the annotation app applies the same rule when it imports the refined rubric).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from gamut_eval.rubric._model import (
    FROZEN,
    TIERS,
    FactItem,
    FlexibleListItem,
    Item,
    MetaInsightItem,
    MetaRubric,
    ProcessItem,
    RelationshipItem,
    StrictListItem,
    Text,
    Tier,
)

CheckText = Annotated[str, Field(pattern=r"\S")]
"""Non-blank text, checked inside pydantic-core: a checklist has tens of thousands of checks
at paper scale, and a Python validator per check would dominate compile time."""


class CheckKind(StrEnum):
    """What compile rule produced a check (docs/method.md [C2])."""

    FACT = "fact"
    LIST_ITEM = "list_item"
    LIST_THRESHOLD = "list_threshold"
    LIST_OPTION = "list_option"
    COVERAGE_THRESHOLD = "coverage_threshold"
    STEP = "step"
    SEQUENCE = "sequence"
    SEQUENCE_FULL = "sequence_full"
    RELATION_ENTITY = "relation_entity"
    RELATION_ASPECT = "relation_aspect"
    META_INSIGHT = "meta_insight"


class CompileConfig(BaseModel):
    """The knobs of the compile rules; recorded with every compiled checklist."""

    model_config = FROZEN

    short_list_max: Annotated[int, Field(ge=1)] = 7
    """A flexible list with at most this many options gets one check per option."""
    coverage_fractions: tuple[Annotated[float, Field(gt=0, le=1)], ...] = (0.5, 0.75)
    """Default higher coverage thresholds, as fractions of the pool: ``ceil(f * n)``."""


class Check(BaseModel):
    """One binary check of a checklist."""

    model_config = FROZEN

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)?$")]
    """Stable, readable id: ``core/item-1``, ``proteins/min-2``, ``prep/sequence``..."""
    kind: CheckKind
    """The compile rule that produced it."""
    tier: Tier
    """Importance tier the check is scored in."""
    text: CheckText
    """Self-contained statement the judge grades the response against."""
    item: str
    """Id of the meta-rubric item it comes from."""
    secondary: bool = False
    """True for checks one tier below their item (optional elements, coverage, full order)."""
    cites: tuple[str, ...] = ()
    """Evidence ids supporting it."""
    target: str | None = None
    """What the check asks for, as the compiler put it into ``text``: the statement (facts,
    meta-insights), the element (list items and options), the step, the related entity, or
    the aspect of a relationship; for a threshold or coverage check the list's name, for a
    sequence check the process's name. None for a check written or edited by hand: its
    ``text`` is then the only statement of what it asks."""
    options: tuple[str, ...] = ()
    """Threshold and coverage checks: every option of the list, in rubric order. Sequence
    checks: the steps, in the order they must be presented. Empty for other checks."""
    at_least: Annotated[int, Field(ge=1)] | None = None
    """Threshold and coverage checks: how many of ``options`` the response must mention."""

    def without_structure(self) -> Check:
        """This check with ``target``, ``options`` and ``at_least`` cleared: what is left
        once a person edits its text, which the compiler's data no longer describes."""
        return self.model_copy(update={"target": None, "options": (), "at_least": None})


class Checklist(BaseModel):
    """A flat list of binary checks for one question, with the config that compiled it."""

    model_config = FROZEN

    rubric_id: Text
    """Id of the meta-rubric (the question id in a dataset)."""
    config: CompileConfig = CompileConfig()
    """The compile configuration used."""
    checks: Annotated[tuple[Check, ...], Field(min_length=1)]
    """The checks, in rubric order."""

    @model_validator(mode="after")
    def _unique_ids(self) -> Checklist:
        seen: set[str] = set()
        for check in self.checks:
            if check.id in seen:
                raise ValueError(f"duplicate check id {check.id!r}")
            seen.add(check.id)
        return self

    @classmethod
    def trusted(cls, rubric_id: str, config: CompileConfig, checks: tuple[Check, ...]) -> Checklist:
        """A checklist built without validation, for the compiler's own output.

        The compiler's input is a validated meta-rubric, whose rules guarantee what
        validation would check here (ids that match the pattern and are unique, non-blank
        texts, at least one check); skipping it is most of what makes compiling fast.
        Checklists read from files go through ``model_validate``.
        """
        checklist = _new(cls)
        _set(checklist, "__dict__", {"rubric_id": rubric_id, "config": config, "checks": checks})
        _set(checklist, "__pydantic_fields_set__", {"rubric_id", "config", "checks"})
        _set(checklist, "__pydantic_extra__", None)
        _set(checklist, "__pydantic_private__", None)
        return checklist

    def by_id(self) -> dict[str, Check]:
        """Checks keyed by id."""
        return {check.id: check for check in self.checks}

    def count_by_tier(self) -> dict[Tier, int]:
        """How many checks each tier has (all three tiers, zero included)."""
        counts = dict.fromkeys(TIERS, 0)
        for check in self.checks:
            counts[check.tier] += 1
        return counts


_set = object.__setattr__
_new = BaseModel.__new__


_CHECK_FIELDS = set(Check.model_fields)
"""Every field of ``Check``: each compiled check sets them all. One set for all of them,
which saves a third of the objects the cyclic garbage collector tracks per check. A frozen
model's fields set may be shared: pydantic changes it in place only on attribute
assignment, which a frozen model refuses (``model_copy`` copies it first)."""


def trusted_check(
    check_id: str,
    kind: CheckKind,
    tier: Tier,
    text: str,
    item: str,
    secondary: bool,
    cites: tuple[str, ...],
    target: str | None,
    options: tuple[str, ...] = (),
    at_least: int | None = None,
) -> Check:
    """A ``Check`` built without validation; only for the compiler's own output.

    What ``Check.model_construct`` builds when every field is given, without its per-field
    Python loop: this runs once per compiled check, tens of thousands at paper scale.
    """
    check: Check = _new(Check)
    _set(
        check,
        "__dict__",
        {
            "id": check_id,
            "kind": kind,
            "tier": tier,
            "text": text,
            "item": item,
            "secondary": secondary,
            "cites": cites,
            "target": target,
            "options": options,
            "at_least": at_least,
        },
    )
    _set(check, "__pydantic_fields_set__", _CHECK_FIELDS)
    _set(check, "__pydantic_extra__", None)
    _set(check, "__pydantic_private__", None)
    return check


def compile_rubric(meta: MetaRubric, config: CompileConfig | None = None) -> Checklist:
    """Compile ``meta`` into its checklist; deterministic for a given rubric and config."""
    config = config or CompileConfig()
    checks: list[Check] = []
    for item in meta.items:
        checks.extend(_compile_item(item, config))
    # ``meta`` is a validated meta-rubric, so the checks need no validation of their own
    # (``Checklist.trusted``); compiling is on the hot path of a build and of every score.
    return Checklist.trusted(meta.id, config, tuple(checks))


def coverage_thresholds(item: FlexibleListItem, config: CompileConfig) -> list[int]:
    """The higher coverage thresholds of a long (or Context) flexible list.

    Explicit ``coverage_thresholds`` win; else ``ceil(f * n)`` per configured fraction,
    de-duplicated, keeping values above the highest baseline and at most ``n``. Fractions
    are taken as exact decimals so ``0.7 * 10`` is 7, not 8.
    """
    n = len(item.options)
    if item.coverage_thresholds is not None:
        return list(item.coverage_thresholds)
    top = max(item.min_required)
    return [v for v in _default_thresholds(config.coverage_fractions, n) if top < v <= n]


@lru_cache(maxsize=1024)
def _default_thresholds(fractions: tuple[float, ...], n: int) -> tuple[int, ...]:
    return tuple(sorted({math.ceil(Fraction(str(f)) * n) for f in fractions}))


def _compile_item(item: Item, config: CompileConfig) -> list[Check]:
    if isinstance(item, FactItem | MetaInsightItem):
        kind = CheckKind.FACT if isinstance(item, FactItem) else CheckKind.META_INSIGHT
        text = item.statement
        return [trusted_check(item.id, kind, item.tier, text, item.id, False, item.cites, text)]
    if isinstance(item, StrictListItem):
        return _strict_list(item) + _insights(item)
    if isinstance(item, FlexibleListItem):
        return _flexible_list(item, config) + _insights(item)
    if isinstance(item, ProcessItem):
        return _process(item) + _insights(item)
    return _relationship(item)


def _clause(text: str) -> str:
    """Element text without surrounding space or one final full stop, to embed in a sentence."""
    text = text.strip()
    return text[:-1].rstrip() if text.endswith(".") and not text.endswith("..") else text


def _union_cites(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """Cites of several elements, in first-seen order, for checks that span them."""
    seen: dict[str, None] = {}
    for group in groups:
        for cite in group:
            seen[cite] = None
    return tuple(seen)


def _strict_list(item: StrictListItem) -> list[Check]:
    name, stem, tier, cites = _clause(item.name), item.id, item.tier, item.cites
    checks = []
    for i, element in enumerate(item.items, start=1):
        key = _clause(element.text)
        checks.append(
            trusted_check(
                f"{stem}/item-{i}",
                CheckKind.LIST_ITEM,
                tier,
                f"Mentions {key} as one of the {name}.",
                stem,
                False,
                element.cites or cites,
                key,
            )
        )
    return checks


def _flexible_list(item: FlexibleListItem, config: CompileConfig) -> list[Check]:
    stem, tier = item.id, item.tier
    pooled = item.cites or _union_cites(o.cites for o in item.options)
    name = _clause(item.name)
    options = tuple(_clause(o.text) for o in item.options)
    # The threshold text is joined once per list, not once per threshold.
    head, tail = "Mentions at least ", f" of the following {name}: {'; '.join(options)}."
    checks = [
        trusted_check(
            f"{stem}/min-{b}",
            CheckKind.LIST_THRESHOLD,
            tier,
            f"{head}{b}{tail}",
            stem,
            False,
            pooled,
            name,
            options,
            b,
        )
        for b in item.min_required
    ]
    lower = tier.lower()
    if len(options) <= config.short_list_max and tier is not Tier.CONTEXT:
        checks += [
            trusted_check(
                f"{stem}/option-{i}",
                CheckKind.LIST_OPTION,
                lower,
                f"Mentions {key} among the {name}.",
                stem,
                True,
                option.cites or item.cites,
                key,
            )
            for i, (key, option) in enumerate(zip(options, item.options, strict=True), start=1)
        ]
    else:
        checks += [
            trusted_check(
                f"{stem}/coverage-{t}",
                CheckKind.COVERAGE_THRESHOLD,
                lower,
                f"{head}{t}{tail}",
                stem,
                True,
                pooled,
                name,
                options,
                t,
            )
            for t in coverage_thresholds(item, config)
        ]
    return checks


def _sequence_text(name: str, steps: Sequence[str]) -> str:
    ordered = "; ".join(f"({i}) {s}" for i, s in enumerate(steps, start=1))
    return f"Presents these steps of {name} in this relative order: {ordered}."


def _process(item: ProcessItem) -> list[Check]:
    stem, tier = item.id, item.tier
    lower = tier.lower()
    name = _clause(item.name)
    keys = [_clause(step.text) for step in item.steps]
    checks = [
        trusted_check(
            f"{stem}/step-{i}",
            CheckKind.STEP,
            tier if step.required else lower,
            f"Describes this step of {name}: {key}.",
            stem,
            not step.required,
            step.cites or item.cites,
            key,
        )
        for i, (key, step) in enumerate(zip(keys, item.steps, strict=True), start=1)
    ]
    required = [(key, step) for key, step in zip(keys, item.steps, strict=True) if step.required]
    if len(required) >= 2:
        steps = tuple(key for key, _ in required)
        checks.append(
            trusted_check(
                f"{stem}/sequence",
                CheckKind.SEQUENCE,
                tier,
                _sequence_text(name, steps),
                stem,
                False,
                item.cites or _union_cites(s.cites for _, s in required),
                name,
                steps,
            )
        )
    if len(required) < len(item.steps):
        checks.append(
            trusted_check(
                f"{stem}/sequence-full",
                CheckKind.SEQUENCE_FULL,
                lower,
                _sequence_text(name, keys),
                stem,
                True,
                item.cites or _union_cites(s.cites for s in item.steps),
                name,
                tuple(keys),
            )
        )
    return checks


def _relationship(item: RelationshipItem) -> list[Check]:
    stem, tier, cites = item.id, item.tier, item.cites
    entity, relation = _clause(item.entity), _clause(item.relation)
    checks = [
        trusted_check(
            f"{stem}/entity",
            CheckKind.RELATION_ENTITY,
            tier,
            f"Identifies the related entity {entity} ({relation}).",
            stem,
            False,
            cites,
            entity,
        )
    ]
    for i, aspect in enumerate(item.aspects, start=1):
        key = _clause(aspect.text)
        checks.append(
            trusted_check(
                f"{stem}/aspect-{i}",
                CheckKind.RELATION_ASPECT,
                tier,
                f"About {entity} ({relation}), states that {key}.",
                stem,
                False,
                aspect.cites or cites,
                key,
            )
        )
    return checks


def _insights(item: StrictListItem | FlexibleListItem | ProcessItem) -> list[Check]:
    return [
        trusted_check(
            f"{item.id}/insight-{i}",
            CheckKind.META_INSIGHT,
            insight.tier or item.tier,
            insight.statement,
            item.id,
            False,
            insight.cites or item.cites,
            insight.statement,
        )
        for i, insight in enumerate(item.meta_insights, start=1)
    ]


_TITLES = {"answer_critical": "Answer-Critical", "valuable": "Valuable", "context": "Context"}


def checklist_markdown(checklist: Checklist, question: str | None = None) -> str:
    """A Markdown rendering: one section per tier, one line per check."""
    lines = [f"# Checklist `{checklist.rubric_id}`", ""]
    if question:
        lines += [f"> {question}", ""]
    counts = checklist.count_by_tier()
    for tier in TIERS:
        checks = [c for c in checklist.checks if c.tier is tier]
        if not checks:
            continue
        lines += [f"## {_TITLES[tier.value]} ({counts[tier]} checks)", ""]
        for check in checks:
            flags = f"`{check.kind.value}`" + (", secondary" if check.secondary else "")
            cites = f" [{', '.join(check.cites)}]" if check.cites else ""
            lines.append(f"- [ ] **{check.id}** ({flags}): {check.text}{cites}")
        lines.append("")
    return "\n".join(lines)


_SEEN = ("text", "tier", "kind", "item", "secondary", "cites")
"""The fields people see and edit."""


class ChecklistEdit(BaseModel):
    """One edit people made to a compiled checklist."""

    model_config = FROZEN

    question: str
    """The rubric's id."""
    check: str
    """The check id."""
    kind: Literal["removed", "changed", "added"]
    """What people did to the check."""
    before: str | None = None
    """The compiled check (``[AC] text``), for ``removed`` and ``changed``."""
    after: str | None = None
    """People's version, for ``changed`` and ``added``."""
    fits: bool
    """Whether the edit still applies to the refined rubric: the refinement left the check
    as it was (or, for an added check, its item is still there and no check has its text)."""

    def line(self) -> str:
        where = f"{self.question} {self.check}"
        what = {
            "removed": f"removed by people: {self.before}",
            "changed": f"changed by people: {self.before} -> {self.after}",
            "added": f"added by people: {self.after}",
        }[self.kind]
        then = (
            "re-applied on import"
            if self.fits
            else "the refinement changed this check; its refined version is kept"
        )
        return f"{where}: {what} ({then})"


def _shown(check: Check) -> str:
    return f"[{check.tier.short}] {check.text}"


def _same(a: Check, b: Check) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in _SEEN)


def checklist_edits(
    meta: MetaRubric, revised: Checklist, refined: MetaRubric | None = None
) -> list[ChecklistEdit]:
    """``revised`` compared with ``compile_rubric(meta)``; each edit's ``fits`` says whether
    it still applies to ``refined`` (the same rubric when not given)."""
    base = compile_rubric(meta).by_id()
    after = compile_rubric(refined or meta).by_id()
    texts = {c.text for c in after.values()}
    items = {item.id for item in (refined or meta).items}
    edits: list[ChecklistEdit] = []
    people = revised.by_id()
    for cid, check in base.items():
        mine = people.get(cid)
        fits = cid in after and _same(after[cid], check)
        if mine is None:
            edits.append(
                ChecklistEdit(
                    question=meta.id, check=cid, kind="removed", before=_shown(check), fits=fits
                )
            )
        elif not _same(mine, check):
            edits.append(
                ChecklistEdit(
                    question=meta.id,
                    check=cid,
                    kind="changed",
                    before=_shown(check),
                    after=_shown(mine),
                    fits=fits,
                )
            )
    for cid, mine in people.items():
        if cid not in base:
            fits = mine.item in items and cid not in after and mine.text not in texts
            edits.append(
                ChecklistEdit(
                    question=meta.id, check=cid, kind="added", after=_shown(mine), fits=fits
                )
            )
    return edits
