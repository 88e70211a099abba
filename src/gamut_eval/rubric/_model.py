"""The meta-rubric: the authoring format of docs/method.md [R1]-[R10], as frozen Pydantic models.

Structural rules (types, required fields, unknown fields, patterns, lengths) live on the
models: tiers, evidence and the six item types. The rules that span fields (unique ids,
references, thresholds; docs/method.md [R7]-[R9]) return every problem they find as an
``ErrorDetail`` with the JSON path inside the document, so a file's errors are all reported
at once; they run from ``MetaRubric``'s after-validator, so a ``MetaRubric`` that exists is
always valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
    model_validator,
)
from pydantic_core import PydanticCustomError

from gamut_eval.errors import ErrorDetail, ValidationError


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


_CONTAINERS = (StrictListItem, FlexibleListItem, ProcessItem)


def rule_errors(
    evidence: Iterable[tuple[int, str]],
    items: Iterable[tuple[int, Item]],
    item_ids: Iterable[tuple[int, str, object]] | None = None,
) -> list[ErrorDetail]:
    """Problems with ids, references, thresholds and duplicates.

    ``evidence`` is ``(index, id)`` per snippet and ``items`` ``(index, item)`` per item, with
    indices into the document, so this also works on the parts of a document that parsed.
    ``item_ids`` (``(index, id, type)``) may add the ids of items that did not parse.
    """
    evidence = list(evidence)
    items = list(items)
    ids = list(item_ids) if item_ids is not None else [(i, it.id, it.type) for i, it in items]
    errors = _duplicate_ids("evidence", evidence)
    errors += _duplicate_ids("items", [(i, item_id) for i, item_id, _ in ids])
    known = {eid for _, eid in evidence}
    kinds = {item_id: kind for _, item_id, kind in ids}
    for index, item in items:
        base = f"items[{index}]"
        errors += _citation_errors(base, item, known)
        errors += _element_duplicates(base, item)
        if isinstance(item, FlexibleListItem):
            errors += _threshold_errors(base, item)
        if isinstance(item, MetaInsightItem) and item.about is not None:
            errors += _about_errors(base, item.about, kinds)
    return errors


def _repeats(keys: Iterable[tuple[int, str]]) -> Iterator[tuple[int, int]]:
    """``(index, index of the first with the same key)`` for each key met before."""
    seen: dict[str, int] = {}
    for index, key in keys:
        first = seen.setdefault(key, index)
        if first != index:
            yield index, first


def _duplicate_ids(section: str, ids: Sequence[tuple[int, str]]) -> list[ErrorDetail]:
    value = dict(ids)
    return [
        ErrorDetail(
            f"{section}[{i}].id",
            "unique-id",
            f"duplicate id; {section}[{first}] already uses it",
            value[i],
        )
        for i, first in _repeats(ids)
    ]


def _cite_lists(item: Item) -> list[tuple[str, tuple[str, ...]]]:
    """Every ``cites`` list inside an item, with its path relative to the item."""
    found: list[tuple[str, tuple[str, ...]]] = [("cites", item.cites)]
    field, elements = item_elements(item)
    found += [(f"{field}[{i}].cites", e.cites) for i, e in enumerate(elements)]
    if isinstance(item, _CONTAINERS):
        found += [(f"meta_insights[{i}].cites", m.cites) for i, m in enumerate(item.meta_insights)]
    return found


def _citation_errors(base: str, item: Item, known: set[str]) -> list[ErrorDetail]:
    errors = []
    for rel, cites in _cite_lists(item):
        for j, cite in enumerate(cites):
            if cite not in known:
                hint = ", ".join(sorted(known)) or "none defined"
                errors.append(
                    ErrorDetail(
                        f"{base}.{rel}[{j}]",
                        "cite-exists",
                        f"cites an evidence id that is not in `evidence` (known: {hint})",
                        cite,
                    )
                )
    return errors


def _element_duplicates(base: str, item: Item) -> list[ErrorDetail]:
    field, elements = item_elements(item)
    keys = [(i, " ".join(e.text.casefold().split())) for i, e in enumerate(elements)]
    return [
        ErrorDetail(
            f"{base}.{field}[{i}]",
            "unique-element",
            f"repeats {field}[{first}] (compared ignoring case and whitespace)",
            elements[i].text,
        )
        for i, first in _repeats(keys)
    ]


def _threshold_errors(base: str, item: FlexibleListItem) -> list[ErrorDetail]:
    n = len(item.options)
    errors = []
    baselines = item.min_required
    for i, b in enumerate(baselines):
        if not 1 <= b <= n:
            path = f"{base}.min_required" + (f"[{i}]" if len(baselines) > 1 else "")
            errors.append(
                ErrorDetail(
                    path,
                    "threshold-range",
                    f"a baseline must be between 1 and the number of options ({n})",
                    b,
                )
            )
    if len(baselines) == 2 and baselines[0] >= baselines[1]:
        errors.append(
            ErrorDetail(
                f"{base}.min_required",
                "threshold-order",
                "two baselines must be strictly increasing",
                list(baselines),
            )
        )
    if item.coverage_thresholds is not None:
        errors += _coverage_errors(base, item.coverage_thresholds, max(baselines), n)
    return errors


def _coverage_errors(base: str, thresholds: tuple[int, ...], top: int, n: int) -> list[ErrorDetail]:
    errors = []
    for i, t in enumerate(thresholds):
        path = f"{base}.coverage_thresholds[{i}]"
        if not top < t <= n:
            errors.append(
                ErrorDetail(
                    path,
                    "threshold-range",
                    f"a coverage threshold must be above the highest baseline ({top}) "
                    f"and at most the number of options ({n})",
                    t,
                )
            )
        if i and thresholds[i - 1] >= t:
            errors.append(
                ErrorDetail(
                    path,
                    "threshold-order",
                    "coverage thresholds must be strictly increasing",
                    list(thresholds),
                )
            )
    return errors


_CONTAINER_TYPES = ("strict_list", "flexible_list", "process")


def _about_errors(base: str, about: str, kinds: dict[str, object]) -> list[ErrorDetail]:
    if about not in kinds:
        return [
            ErrorDetail(
                f"{base}.about", "about-exists", "refers to an item id that does not exist", about
            )
        ]
    kind = kinds[about]
    if kind not in _CONTAINER_TYPES:
        return [
            ErrorDetail(
                f"{base}.about",
                "about-type",
                f"must name a strict_list, flexible_list or process item, not a {kind}",
                about,
            )
        ]
    return []


class MetaRubric(BaseModel):
    """One question's meta-rubric: typed items with tiers and citations (docs/method.md [R1])."""

    model_config = FROZEN

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


def meta_rubric_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a meta-rubric document.

    It covers the structure; rules that span fields (unique ids, references, threshold
    ranges) are checked by ``gamut validate``.
    """
    schema = MetaRubric.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gamut-eval.dev/schema/meta-rubric.schema.json",
        **schema,
    }
