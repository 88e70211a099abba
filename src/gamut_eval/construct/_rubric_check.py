"""Turning a model's items into a valid meta-rubric, or into errors to feed back.

The evidence, id, question and entity are ours; the model writes only the items. Its items
are validated with the project's own validator (every problem at once, with JSON paths
that match the model's ``{"items": [...]}``), and one rule the format leaves optional is
required here: every item cites evidence, on the item or on each of its elements, since a
built rubric must be grounded in the snippets (docs/method.md [B6]).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gamut_eval.construct._errors import Invalid
from gamut_eval.errors import ValidationError
from gamut_eval.rubric import Evidence, Item, MetaRubric, item_elements, validate_meta_rubric

__all__ = ["element_cites", "grounding_errors", "rubric_from_items"]


def element_cites(item: Item) -> list[tuple[str, ...]]:
    """The ``cites`` of each list element, option, step or aspect of an item."""
    return [e.cites for e in item_elements(item)[1]]


def grounding_errors(meta: MetaRubric) -> list[str]:
    """Items that cite no evidence (neither on the item nor on every element)."""
    errors = []
    for index, item in enumerate(meta.items):
        elements = element_cites(item)
        if item.cites or (elements and all(elements)):
            continue
        errors.append(
            f"items[{index}].cites: item {item.id!r} cites no snippet; cite the ids of the "
            "snippets that support it (on the item, or on each of its elements) [cite-required]"
        )
    return errors


def rubric_from_items(
    *,
    rubric_id: str,
    question: str,
    entity: str | None,
    evidence: Sequence[Evidence],
    data: Any,
) -> MetaRubric:
    """The meta-rubric made of our header and the model's ``items``; ``Invalid`` lists every
    problem (structure, rules, grounding)."""
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise Invalid(['`items` is missing or not a list: reply {"items": [...]}'])
    document = {
        "id": rubric_id,
        "question": question,
        "entity": entity,
        "evidence": [e.model_dump(exclude_none=True) for e in evidence],
        "items": items,
    }
    try:
        meta = validate_meta_rubric(document)
    except ValidationError as exc:
        raise Invalid([d.render() for d in exc.details]) from None
    errors = grounding_errors(meta)
    if errors:
        raise Invalid(errors)
    return meta
