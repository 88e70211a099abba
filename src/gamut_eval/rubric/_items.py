"""The parts of a meta-rubric (docs/method.md [R1]-[R10]): tiers, evidence and the six item
types, as frozen Pydantic models.

Structural rules (types, required fields, unknown fields, patterns, lengths) live on the
models; the document that holds them, and the rules that span fields, are ``_model.py``
and ``_rules.py``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
)
from pydantic_core import PydanticCustomError


class Tier(StrEnum):
    """Importance tiers, most important first."""

    ANSWER_CRITICAL = "answer_critical"
    VALUABLE = "valuable"
    CONTEXT = "context"

    def lower(self) -> Tier:
        """One tier down; Context has none beneath it, so it stays Context (method.md [C1])."""
        if self is Tier.ANSWER_CRITICAL:
            return Tier.VALUABLE
        return Tier.CONTEXT

    @property
    def short(self) -> str:
        return {"answer_critical": "AC", "valuable": "V", "context": "C"}[self.value]


TIERS: tuple[Tier, ...] = (Tier.ANSWER_CRITICAL, Tier.VALUABLE, Tier.CONTEXT)


def _non_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("non-empty", "must not be empty or only whitespace")
    return value


Text = Annotated[str, AfterValidator(_non_blank)]
ItemId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")]
RubricId = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
Cites = tuple[Text, ...]

FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def _text_to_element(value: Any) -> Any:
    """A list element may be written as a bare string."""
    return {"text": value} if isinstance(value, str) else value


def _int_to_list(value: Any) -> Any:
    """``min_required: 2`` is shorthand for ``min_required: [2]``."""
    return [value] if isinstance(value, int) and not isinstance(value, bool) else value


class Evidence(BaseModel):
    """A short web snippet that rubric items cite."""

    model_config = FROZEN

    id: Text
    """Unique within the rubric, e.g. ``s1``."""
    text: Text
    """The snippet itself."""
    source: str | None = None
    """Where it was found (a URL or a document name)."""
    title: str | None = None
    """Title of the source page."""


class _Element(BaseModel):
    model_config = FROZEN

    text: Text
    """The element as the answer should state it."""
    cites: Cites = ()
    """Evidence ids supporting this element (else the item's apply)."""


Element = Annotated[
    _Element, BeforeValidator(_text_to_element, json_schema_input_type=str | _Element)
]
"""A list element: a string, or ``{text, cites}``."""


class _Step(BaseModel):
    model_config = FROZEN

    text: Text
    """What happens in this step."""
    required: StrictBool = True
    """Optional steps give secondary checks one tier lower (true or false, not "yes")."""
    cites: Cites = ()
    """Evidence ids supporting this step (else the item's apply)."""


Step = Annotated[_Step, BeforeValidator(_text_to_element, json_schema_input_type=str | _Step)]
"""A process step: a string (a required step), or ``{text, required, cites}``."""


class NestedInsight(BaseModel):
    """A synthesis across the elements of a list or process that no single element captures."""

    model_config = FROZEN

    statement: Text
    """What the answer should convey."""
    tier: Tier | None = None
    """Defaults to the parent item's tier."""
    cites: Cites = ()
    """Evidence ids (else the parent item's apply)."""


class _ItemBase(BaseModel):
    model_config = FROZEN

    id: ItemId
    """Unique within the rubric; the stem of every check id it compiles to."""
    tier: Tier
    """Importance: ``answer_critical``, ``valuable`` or ``context``."""
    cites: Cites = ()
    """Evidence ids that support the item."""


class FactItem(_ItemBase):
    """A single discrete fact: one check."""

    type: Literal["fact"]
    statement: Text
    """The fact, phrased as what the answer must state."""


class _ListBase(_ItemBase):
    name: Text
    """A short noun phrase for the set, used in self-contained check texts."""
    meta_insights: tuple[NestedInsight, ...] = ()
    """Syntheses across the elements (one check each)."""


class StrictListItem(_ListBase):
    """A finite set in which every element is required: one check per element."""

    type: Literal["strict_list"]
    items: Annotated[tuple[Element, ...], Field(min_length=1)]
    """Every element is required."""


class FlexibleListItem(_ListBase):
    """A pool of valid options of which enough must be covered."""

    type: Literal["flexible_list"]
    options: Annotated[tuple[Element, ...], Field(min_length=2)]
    """The pool of acceptable options (at least 2)."""
    min_required: Annotated[
        tuple[StrictInt, ...],
        BeforeValidator(_int_to_list, json_schema_input_type=int | list[int]),
        Field(min_length=1, max_length=2),
    ]
    """Baseline threshold(s): an int, or a list of one or two strictly increasing ints."""
    coverage_thresholds: tuple[StrictInt, ...] | None = None
    """Override for the higher coverage thresholds (strictly increasing, above the baseline)."""


class ProcessItem(_ListBase):
    """An ordered sequence of steps in which the order carries meaning."""

    type: Literal["process"]
    steps: Annotated[tuple[Step, ...], Field(min_length=2)]
    """At least two steps, in order."""


class RelationshipItem(_ItemBase):
    """A connection or contrast between the entity and another one."""

    type: Literal["relationship"]
    entity: Text
    """The related entity the answer must identify."""
    relation: Text
    """How it is related, e.g. ``a variant served in a sizzling stone bowl``."""
    aspects: tuple[Element, ...] = ()
    """Aspects of the connection, one check each."""


class MetaInsightItem(_ItemBase):
    """A standalone synthesis, such as an overarching trend or categorisation."""

    type: Literal["meta_insight"]
    statement: Text
    """What the answer should convey."""
    about: str | None = None
    """Id of the list or process item it synthesises, if any."""


Item = Annotated[
    FactItem | StrictListItem | FlexibleListItem | ProcessItem | RelationshipItem | MetaInsightItem,
    Field(discriminator="type"),
]
ITEM_TYPES: tuple[str, ...] = (
    "fact",
    "strict_list",
    "flexible_list",
    "process",
    "relationship",
    "meta_insight",
)


def item_elements(item: Item) -> tuple[str, tuple[_Element | _Step, ...]]:
    """The field holding an item's list elements, options, steps or aspects, and those
    elements (``("", ())`` for a fact or a meta-insight, which have none)."""
    if isinstance(item, StrictListItem):
        return "items", item.items
    if isinstance(item, FlexibleListItem):
        return "options", item.options
    if isinstance(item, ProcessItem):
        return "steps", item.steps
    if isinstance(item, RelationshipItem):
        return "aspects", item.aspects
    return "", ()
