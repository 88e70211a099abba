"""The refined rubric is a verified superset of the draft: the invariant and the diff.

Invariant: every draft item is in the refined rubric under its id, and every element of
its lists, steps and aspects is still somewhere in the refined rubric (a list may be split
into a strict core and a flexible remainder), unless the item was dropped for a reason the
audit recorded. Wording, tiers and citations may change; the diff records every change.
"""

from __future__ import annotations

from collections.abc import Mapping

from gamut_eval.construct._rubric_models import CheckChange, DropReason, ItemChange, RubricDiff
from gamut_eval.construct._text import element_key
from gamut_eval.rubric._checklist import Check, Checklist
from gamut_eval.rubric._items import item_elements
from gamut_eval.rubric._model import Item, MetaRubric

__all__ = ["element_texts", "rubric_diff", "superset_errors"]


def element_texts(item: Item) -> list[str]:
    """The texts of an item's list elements, options, steps or aspects."""
    return [e.text for e in item_elements(item)[1]]


def superset_errors(
    draft: MetaRubric, refined: MetaRubric, dropped: Mapping[str, str], allowed: Mapping[str, str]
) -> list[str]:
    """Why ``refined`` is not a superset of ``draft`` given the drops (empty: it is).

    ``dropped`` maps item id -> the rebuild's reason; ``allowed`` the items the audit lets go.
    """
    kept = {item.id for item in refined.items}
    everywhere = {element_key(t) for item in refined.items for t in element_texts(item)}
    draft_ids = {item.id for item in draft.items}
    errors = [
        f"`dropped` lists {item_id!r}, which is not a draft item"
        for item_id in dropped
        if item_id not in draft_ids
    ]
    for item in draft.items:
        if item.id in dropped:
            errors += _drop_errors(item.id, kept, allowed)
            continue
        if item.id not in kept:
            errors.append(
                f"draft item {item.id!r} is missing: keep it under the same id (it may only go "
                "if the audit allows it, listed in `dropped` with the reason)"
            )
            continue
        lost = [t for t in element_texts(item) if element_key(t) not in everywhere]
        if lost:
            errors.append(
                f"item {item.id!r} lost draft elements {lost}: keep every element of the draft"
            )
    return errors


def _drop_errors(item_id: str, kept: set[str], allowed: Mapping[str, str]) -> list[str]:
    if item_id not in allowed:
        may = ", ".join(sorted(allowed)) or "none"
        return [
            f"item {item_id!r} may not be dropped: the audit gives no reason to drop it "
            f"(items the audit allows to drop: {may})"
        ]
    if item_id in kept:
        return [f"item {item_id!r} is both kept and listed in `dropped`"]
    return []


def _item_change(before: Item, after: Item) -> ItemChange | None:
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    fields = tuple(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))
    if not fields:
        return None
    known = {element_key(t) for t in element_texts(before)}
    added = tuple(t for t in element_texts(after) if element_key(t) not in known)
    return ItemChange(item=after.id, change="changed", fields=fields, elements_added=added)


def _shown(check: Check) -> str:
    return f"[{check.tier.short}] {check.text}"


def _check_changes(before: Checklist, after: Checklist) -> list[CheckChange]:
    old, new = before.by_id(), after.by_id()
    changes = [
        CheckChange(check=cid, change="dropped", before=_shown(c))
        for cid, c in old.items()
        if cid not in new
    ]
    for cid, check in new.items():
        if cid not in old:
            changes.append(CheckChange(check=cid, change="added", after=_shown(check)))
        elif _shown(old[cid]) != _shown(check):
            changes.append(
                CheckChange(
                    check=cid, change="changed", before=_shown(old[cid]), after=_shown(check)
                )
            )
    return changes


def rubric_diff(
    draft: MetaRubric,
    refined: MetaRubric,
    draft_checks: Checklist,
    refined_checks: Checklist,
    dropped: list[DropReason],
) -> RubricDiff:
    """Items and compiled checks added, changed or dropped from draft to refined."""
    reasons = {d.item: d.reason for d in dropped}
    after = {item.id: item for item in refined.items}
    changes: list[ItemChange] = []
    for item in draft.items:
        if item.id in reasons:
            changes.append(ItemChange(item=item.id, change="dropped", reason=reasons[item.id]))
        elif item.id in after and (change := _item_change(item, after[item.id])) is not None:
            changes.append(change)
    draft_ids = {item.id for item in draft.items}
    changes += [
        ItemChange(item=i.id, change="added", elements_added=tuple(element_texts(i)))
        for i in refined.items
        if i.id not in draft_ids
    ]
    return RubricDiff(
        items=tuple(changes), checks=tuple(_check_changes(draft_checks, refined_checks))
    )
