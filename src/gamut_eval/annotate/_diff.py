"""What changed between two checklists, check by check (pure).

Annotators revise the compiled checklist; the diff against ``compile_rubric(meta_rubric)``
shows exactly what the people changed, and its summary goes into the exported provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gamut_eval.rubric import Check, Checklist

__all__ = ["CheckChange", "ChecklistDiff", "FieldChange", "diff_checklists", "same_content"]

_FIELDS = ("text", "tier", "kind", "item", "secondary", "cites")
"""What people see and edit. The compiler's structured data (``target``, ``options``,
``at_least``) follows from these and is left out: a checklist stored before the compiler
emitted it must not look changed next to a fresh compile."""


@dataclass(frozen=True)
class FieldChange:
    """One field of one check, before and after."""

    field: str
    before: Any
    after: Any


@dataclass(frozen=True)
class CheckChange:
    """A check present on both sides whose fields differ."""

    id: str
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True)
class ChecklistDiff:
    """Checks added, removed and changed, in checklist order."""

    added: tuple[Check, ...]
    removed: tuple[Check, ...]
    changed: tuple[CheckChange, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready account: ids added and removed, and each changed field."""
        return {
            "added": [c.id for c in self.added],
            "removed": [c.id for c in self.removed],
            "changed": {
                c.id: {f.field: {"before": f.before, "after": f.after} for f in c.changes}
                for c in self.changed
            },
        }


def _value(check: Check, field: str) -> Any:
    value = getattr(check, field)
    return (
        list(value)
        if isinstance(value, tuple)
        else str(value)
        if field in ("tier", "kind")
        else value
    )


def same_content(a: Check, b: Check) -> bool:
    """Whether two checks agree on id and on every field people see."""
    return a.id == b.id and all(getattr(a, f) == getattr(b, f) for f in _FIELDS)


def diff_checklists(base: Checklist, new: Checklist) -> ChecklistDiff:
    """``new`` compared with ``base`` (checks matched by id)."""
    before, after = base.by_id(), new.by_id()
    changed = []
    for check in new.checks:
        old = before.get(check.id)
        if old is None:
            continue
        fields = tuple(
            FieldChange(f, _value(old, f), _value(check, f))
            for f in _FIELDS
            if _value(old, f) != _value(check, f)
        )
        if fields:
            changed.append(CheckChange(check.id, fields))
    return ChecklistDiff(
        added=tuple(c for c in new.checks if c.id not in before),
        removed=tuple(c for c in base.checks if c.id not in after),
        changed=tuple(changed),
    )
