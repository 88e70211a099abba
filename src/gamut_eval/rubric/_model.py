"""The meta-rubric: the authoring format of docs/method.md [R1]-[R10], as a frozen Pydantic model.

The item models are in ``_items.py`` (re-exported here); the rules that span fields (unique
ids, references, thresholds) live in ``_rules.py`` and run from ``MetaRubric``'s
after-validator, so a ``MetaRubric`` that exists is always valid.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, model_validator

from gamut_eval.errors import ValidationError
from gamut_eval.rubric._items import (
    FROZEN as _FROZEN,
    ITEM_TYPES as ITEM_TYPES,
    TIERS as TIERS,
    Element as Element,
    Evidence as Evidence,
    FactItem as FactItem,
    FlexibleListItem as FlexibleListItem,
    Item as Item,
    MetaInsightItem as MetaInsightItem,
    NestedInsight as NestedInsight,
    ProcessItem as ProcessItem,
    RelationshipItem as RelationshipItem,
    RubricId as RubricId,
    Step as Step,
    StrictListItem as StrictListItem,
    Text as Text,
    Tier as Tier,
)
from gamut_eval.rubric._rules import rule_errors


class MetaRubric(BaseModel):
    """One question's meta-rubric: typed items with tiers and citations (docs/method.md [R1])."""

    model_config = _FROZEN

    id: RubricId
    """Unique in a dataset."""
    question: Text
    """The question the answers respond to."""
    entity: str | None = None
    """The ground-truth entity, if known."""
    evidence: tuple[Evidence, ...] = ()
    """The snippets the rubric is built from."""
    items: Annotated[tuple[Item, ...], Field(min_length=1)]
    """The typed rubric items."""

    @model_validator(mode="after")
    def _check_rules(self) -> MetaRubric:
        # Not a ValueError on purpose: it carries every problem and passes through Pydantic.
        details = rule_errors(
            [(i, e.id) for i, e in enumerate(self.evidence)], list(enumerate(self.items))
        )
        if details:
            raise ValidationError(details)
        return self
