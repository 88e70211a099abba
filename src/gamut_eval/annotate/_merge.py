"""Merging a checklist edit made on a stale page, check by check.

The editor sends, beside each check's text and tier, the text and tier its page showed
(``check-N-base-text``, ``check-N-base-tier``). When the rubric was saved by someone else
after the page was opened, the edit is merged onto the stored checklist per check (a
three-way merge of base, theirs and mine):

- a check only one side changed takes that side's value (their edits stay, mine land);
- a check both changed the same way is no conflict;
- a check both changed differently, or one edited and the other removed, is a conflict.

Checks added meanwhile are kept, checks removed meanwhile stay removed (unless I edited
them: a conflict), and my new checks are added. With any conflict nothing is saved: the
person sees, per conflicting check, the version the page showed, the one saved meanwhile
and their own, with the editor refilled from the stored checklist plus all their
non-conflicting edits, ready to save again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gamut_eval.annotate._checklist_edit import parse_checklist_form
from gamut_eval.annotate._errors import ConflictError
from gamut_eval.annotate._models import RubricEvent
from gamut_eval.rubric import Checklist

__all__ = ["CheckConflict", "MergeConflict", "Side", "merge_stale_form"]

_BASE = re.compile(r"^check-(\d{1,3})-base-(text|tier)$")


@dataclass(frozen=True)
class Side:
    """One version of a check: its tier and text (None: the check is removed)."""

    tier: str
    text: str


@dataclass(frozen=True)
class CheckConflict:
    """A check both people changed: the page's version, the saved one and the refused edit."""

    id: str
    base: Side
    theirs: Side | None
    mine: Side | None
    by: str
    """Who last saved a change to this check, and when."""


class MergeConflict(ConflictError):
    """A stale save that changed checks someone else changed too; nothing was saved."""

    def __init__(self, message: str, conflicts: list[CheckConflict], form: dict[str, str]):
        super().__init__(message)
        self.conflicts = conflicts
        self.form = form
        """The editor refilled: the stored checklist with every non-conflicting edit."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _bases(form: Mapping[str, str]) -> dict[str, Side] | None:
    """The page's version of each check by id; None when the form carries none for a row."""
    fields: dict[int, dict[str, str]] = {}
    for key, value in form.items():
        match = _BASE.match(key)
        if match:
            fields.setdefault(int(match[1]), {})[match[2]] = value
    bases = {}
    for key, check_id in form.items():
        match = re.match(r"^check-(\d{1,3})-id$", key)
        if match is None:
            continue
        got = fields.get(int(match[1]), {})
        if "text" not in got or "tier" not in got:
            return None
        bases[check_id] = Side(got["tier"], _one_line(got["text"]))
    return bases


def _who_changed(check_id: str, events: list[RubricEvent]) -> str:
    for event in reversed(events):
        if event.action != "checklist" or not event.before or not event.after:
            continue
        before = {c["id"]: c for c in json.loads(event.before).get("checks", [])}
        after = {c["id"]: c for c in json.loads(event.after).get("checks", [])}
        if before.get(check_id) != after.get(check_id):
            return f"{event.actor} at {event.created_at}"
    return "someone"


def merge_stale_form(
    form: Mapping[str, str], current: Checklist, version: int, events: list[RubricEvent]
) -> tuple[dict[str, str], list[CheckConflict]] | None:
    """The form as it should apply to ``current`` (at ``version``), and the conflicts;
    None when the form has no base values to merge with (then the whole save is refused)."""
    bases = _bases(form)
    if bases is None:
        return None
    parsed = parse_checklist_form(form)
    mine = {row.id: row for row in parsed.rows}
    merged: dict[str, str] = {"version": str(version), "comment": parsed.comment}
    conflicts: list[CheckConflict] = []
    stored = current.by_id()
    for i, check in enumerate(current.checks):
        theirs = Side(check.tier.value, _one_line(check.text))
        value, remove = theirs, False
        row = mine.get(check.id)
        if row is not None and check.id in bases:
            base, edit = bases[check.id], Side(row.tier, row.text)
            if row.remove or edit != base:
                if theirs == base:
                    value, remove = edit, row.remove
                elif row.remove or edit != theirs:
                    by = _who_changed(check.id, events)
                    conflicts.append(
                        CheckConflict(check.id, base, theirs, None if row.remove else edit, by)
                    )
        merged.update(
            {
                f"check-{i}-id": check.id,
                f"check-{i}-text": value.text,
                f"check-{i}-tier": value.tier,
                f"check-{i}-base-text": theirs.text,
                f"check-{i}-base-tier": theirs.tier,
            }
        )
        if remove:
            merged[f"check-{i}-remove"] = "1"
    for check_id, row in mine.items():
        page = bases.get(check_id)
        if check_id in stored or page is None or row.remove:
            continue
        if Side(row.tier, row.text) != page:  # edited here, removed meanwhile
            by = _who_changed(check_id, events)
            conflicts.append(CheckConflict(check_id, page, None, Side(row.tier, row.text), by))
    for j, new in enumerate(parsed.new):
        merged.update(
            {
                f"new-{j}-id": new.id,
                f"new-{j}-item": new.item,
                f"new-{j}-kind": new.kind,
                f"new-{j}-tier": new.tier,
                f"new-{j}-text": new.text,
            }
        )
    return merged, conflicts
