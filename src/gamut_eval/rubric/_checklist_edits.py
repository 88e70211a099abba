"""People's edits of a compiled checklist, and whether they still fit a refined rubric (pure).

Annotators revise the binary checklist, not the meta-rubric. When the meta-rubric is then
refined again, each edit (a check removed, its text or tier changed, a check added) can be
re-applied to the refined rubric's compiled checklist only where the refinement left that
check as it was; this module names every edit and says which (the annotation app applies
the same rule when it imports the refined rubric).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from gamut_eval.rubric._checklist import Check, Checklist
from gamut_eval.rubric._compile import compile_rubric
from gamut_eval.rubric._model import MetaRubric

_SEEN = ("text", "tier", "kind", "item", "secondary", "cites")
"""The fields people see and edit."""


class ChecklistEdit(BaseModel):
    """One edit people made to a compiled checklist."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

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
