"""The compiled, flat binary checklist: what a judge grades and what is scored."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gamut_eval.rubric._model import TIERS, Text, Tier

CheckText = Annotated[str, Field(pattern=r"\S")]
"""Non-blank text, checked inside pydantic-core: a checklist has tens of thousands of checks
at paper scale, and a Python validator per check would dominate compile time."""

__all__ = ["Check", "CheckKind", "Checklist", "CompileConfig"]


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

    def by_id(self) -> dict[str, Check]:
        """Checks keyed by id."""
        return {check.id: check for check in self.checks}

    def count_by_tier(self) -> dict[Tier, int]:
        """How many checks each tier has (all three tiers, zero included)."""
        counts = dict.fromkeys(TIERS, 0)
        for check in self.checks:
            counts[check.tier] += 1
        return counts
