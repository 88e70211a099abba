"""The refined rubric is a verified superset of the draft: the invariant and the diff.

Invariant (``gamut_eval.rubric._superset`` defines it, the same check ``gamut build diff``
runs): every item of the rubric refined, every element of its lists, steps and aspects in
its position, every nested meta-insight, citation, tier, threshold, ``required`` flag and
wording stands unchanged; the rebuild may only add. The audit's exceptions: an item it
allows to drop (with the reason), and snippets that failed re-verification with their
citations. Whatever else the rebuild removed or changed is restored and recorded.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from gamut_eval.construct._errors import Invalid
from gamut_eval.construct._rubric_models import CheckChange, DropReason, ItemChange, RubricDiff
from gamut_eval.construct._text import element_key
from gamut_eval.errors import ValidationError
from gamut_eval.rubric import (
    Check,
    Checklist,
    Item,
    MetaRubric,
    RubricChange,
    diff_meta_rubrics,
    item_elements,
    restore_superset,
    superset_problems,
)

__all__ = ["element_texts", "enforce_superset", "rubric_diff", "sanctioned"]


def element_texts(item: Item) -> list[str]:
    """The texts of an item's list elements, options, steps or aspects."""
    return [e.text for e in item_elements(item)[1]]


def sanctioned(change: RubricChange, drops: Collection[str], failed: Collection[str]) -> bool:
    """Whether the audit lets this change happen: a whole item it allows to drop (and the
    rebuild dropped), a snippet that failed re-verification, or a citation of one."""
    if change.kind != "removed":
        return False
    if change.path == change.item and change.item in drops:
        return True
    cited = re.fullmatch(r"(?:.*\.cites|evidence)\[(.+)\]", change.path)
    return cited is not None and cited.group(1) in failed


def enforce_superset(
    draft: MetaRubric, rebuilt: MetaRubric, drops: Collection[str], failed: Collection[str]
) -> tuple[MetaRubric, list[RubricChange]]:
    """The rebuild made a superset of the draft, and what had to be restored.

    ``drops``: items the audit allows to drop that the rebuild dropped; ``failed``: snippet
    ids that failed re-verification (they and their citations may go). Everything else the
    rebuild removed or changed is put back (``restore_superset``); ``Invalid`` if the
    restored rubric breaks a rule.
    """
    problems = [
        c
        for c in superset_problems(diff_meta_rubrics(draft, rebuilt))
        if not sanctioned(c, drops, failed)
    ]
    if not problems:
        return rebuilt, []
    try:
        restored = restore_superset(draft, rebuilt, drop_items=drops, drop_cites=failed)
    except ValidationError as exc:
        raise Invalid(
            [
                "restoring what the rebuild removed or changed breaks a rule: keep the draft's "
                "items as they are",
                *(d.render() for d in exc.details),
            ]
        ) from None
    return restored, problems


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
