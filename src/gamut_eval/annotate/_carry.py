"""Carrying people's checklist edits into the next round (pure).

After a human round the rubric goes back to the LLM for refinement and returns as a new
meta-rubric. When the refined row brings no checklist of its own, the new round starts
from the re-compiled checklist with the previous round's edits re-applied: a check people
removed stays removed, a text or tier they changed stays changed, a check they added is
added again. An edit is re-applied only where the refinement left that check as it was;
where both changed it the refined version is kept and a note says so, so nothing is
silently merged (the previous round's checklist stays in the audit trail either way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gamut_eval.annotate._diff import diff_checklists, same_content
from gamut_eval.rubric import Check, Checklist, MetaRubric

__all__ = ["Carried", "carry_edits"]


@dataclass(frozen=True)
class Carried:
    """The next round's checklist, how many edits were re-applied, and what was not."""

    checklist: Checklist
    applied: int
    notes: tuple[str, ...]


def _next(
    check: Check, before: Check | None, edited: Check | None, notes: list[str]
) -> tuple[Check | None, bool]:
    """The next round's version of one re-compiled check (None: it stays removed), and
    whether a previous edit was re-applied to it."""
    if before is None or edited == before:
        return check, False
    if not same_content(check, before):
        what = "removal" if edited is None else "edit"
        notes.append(
            f"{check.id}: the refinement changed it, so the previous {what} was not re-applied"
        )
        return check, False
    return edited, True


def carry_edits(
    old_base: Checklist, edited: Checklist, new_base: Checklist, meta: MetaRubric
) -> Carried:
    """``edited`` was ``old_base`` after people's round; re-apply that round to ``new_base``."""
    before, after = old_base.by_id(), edited.by_id()
    notes: list[str] = []
    checks: list[Check] = []
    applied = 0
    for check in new_base.checks:
        kept, reapplied = _next(check, before.get(check.id), after.get(check.id), notes)
        applied += reapplied
        if kept is not None:
            checks.append(kept)
    texts, ids = {c.text for c in checks}, {c.id for c in checks}
    items = {item.id for item in meta.items}
    for added in diff_checklists(old_base, edited).added:
        if added.text in texts:
            notes.append(f"{added.id}: the refinement now has this check itself")
        elif added.item not in items or added.id in ids:
            notes.append(f"{added.id}: its item or id no longer fits the refined rubric; not added")
        else:
            checks.append(added)
            applied += 1
    if not checks:
        return Carried(
            new_base, 0, ("every check was removed; the round starts from the refined checklist",)
        )
    data: dict[str, Any] = {
        **new_base.model_dump(mode="json"),
        "checks": [c.model_dump(mode="json") for c in checks],
    }
    return Carried(Checklist.model_validate(data), applied, tuple(notes))
