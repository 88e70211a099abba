"""The compiled, flat binary checklist: what a judge grades and what is scored."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gamut_eval.rubric._model import TIERS, Text, Tier

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


_FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class CompileConfig(BaseModel):
    """The knobs of the compile rules; recorded with every compiled checklist."""

    model_config = _FROZEN

    short_list_max: Annotated[int, Field(ge=1)] = 7
    """A flexible list with at most this many options gets one check per option."""
    coverage_fractions: tuple[Annotated[float, Field(gt=0, le=1)], ...] = (0.5, 0.75)
    """Default higher coverage thresholds, as fractions of the pool: ``ceil(f * n)``."""


class Check(BaseModel):
    """One binary check of a checklist."""

    model_config = _FROZEN

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

    model_config = _FROZEN

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
        return _trusted(cls, {"rubric_id": rubric_id, "config": config, "checks": checks})

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


_M = TypeVar("_M", bound=BaseModel)


def _trusted(cls: type[_M], values: dict[str, Any], fields_set: set[str] | None = None) -> _M:
    """What ``cls.model_construct(**values)`` builds when ``values`` names every field (in
    field order), without its per-field Python loop: a compiled checklist has tens of
    thousands of checks at paper scale.

    ``fields_set`` may be shared between instances of a frozen model: pydantic changes it
    in place only on attribute assignment, which a frozen model refuses (``model_copy``
    copies it first).
    """
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values) if fields_set is None else fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


_CHECK_FIELDS = set(Check.model_fields)
"""Every field of ``Check``: each compiled check sets them all. One set for all of them,
which saves a third of the objects the cyclic garbage collector tracks per check."""


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

    The same as ``_trusted(Check, {...}, _CHECK_FIELDS)``, inlined: this runs once per
    compiled check.
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
