"""Checklists as people edit them (pure): the editor's form, merging an edit made on a stale
page, what changed between two checklists, and carrying edits into the next round.

The editor's form carries, per existing check, only what a person may edit (text, tier,
remove); kind, item, secondary flag and citations come from the stored checklist, so a
tampered form cannot rewrite them. A check whose text is edited loses the compiler's
structured data (``target``, ``options``, ``at_least``), which described the old text.
New checks name a meta-rubric item, a kind, a tier and a text. Every problem is reported
at once, by check id, never as a crash.

Merging a stale edit. The editor sends, beside each check's text and tier, the text and
tier its page showed (``check-N-base-text``, ``check-N-base-tier``). When the rubric was
saved by someone else after the page was opened, the edit is merged onto the stored
checklist per check (a three-way merge of base, theirs and mine):

- a check only one side changed takes that side's value (their edits stay, mine land);
- a check both changed the same way is no conflict;
- a check both changed differently, or one edited and the other removed, is a conflict.

Checks added meanwhile are kept, checks removed meanwhile stay removed (unless I edited
them: a conflict), and my new checks are added. With any conflict nothing is saved: the
person sees, per conflicting check, the version the page showed, the one saved meanwhile
and their own, with the editor refilled from the stored checklist plus all their
non-conflicting edits, ready to save again.

Diffs. Annotators revise the compiled checklist; the diff against
``compile_rubric(meta_rubric)`` shows exactly what the people changed, and its summary
goes into the exported provenance.

Carrying edits. After a human round the rubric goes back to the LLM for refinement and
returns as a new meta-rubric. When the refined row brings no checklist of its own, the new
round starts from the re-compiled checklist with the previous round's edits re-applied: a
check people removed stays removed, a text or tier they changed stays changed, a check
they added is added again. An edit is re-applied only where the refinement left that
check as it was; where both changed it the refined version is kept and a note says so, so
nothing is silently merged (the previous round's checklist stays in the audit trail
either way).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pydantic

from gamut_eval.annotate._db import RubricEvent
from gamut_eval.annotate._errors import ConflictError, FormError
from gamut_eval.rubric import Check, CheckKind, Checklist, MetaRubric, pydantic_details

_MAX_ROWS = 500
"""More rows than any rubric has: a bound on the work a single POST can cause."""
_FIELD = re.compile(r"^(check|new)-(\d{1,3})-(id|text|tier|remove|item|kind)$")


@dataclass(frozen=True)
class CheckRow:
    """An existing check as submitted."""

    id: str
    text: str
    tier: str
    remove: bool


@dataclass(frozen=True)
class NewCheckRow:
    """A check to add (ignored when its text and id are both blank)."""

    id: str
    item: str
    kind: str
    tier: str
    text: str


@dataclass(frozen=True)
class ChecklistForm:
    """The whole submitted editor."""

    rows: tuple[CheckRow, ...]
    new: tuple[NewCheckRow, ...]
    comment: str


def one_line(text: str) -> str:
    """A check is one statement: line breaks and runs of spaces from a textarea collapse."""
    return " ".join(text.split())


def numbered(
    form: Mapping[str, str], pattern: re.Pattern[str]
) -> dict[tuple[str, int], dict[str, str]]:
    """The fields ``pattern`` matches as ``PREFIX-N-NAME`` (its three groups), grouped by
    prefix and number: one dict of NAME -> value per row."""
    groups: dict[tuple[str, int], dict[str, str]] = {}
    for key, value in form.items():
        if match := pattern.match(key):
            groups.setdefault((match[1], int(match[2])), {})[match[3]] = value
    return groups


def parse_checklist_form(form: Mapping[str, str]) -> ChecklistForm:
    """Group ``check-3-text``-style fields into rows, in index order."""
    groups = numbered(form, _FIELD)
    if len(groups) > _MAX_ROWS:
        raise FormError([f"too many rows in one save ({len(groups)}; at most {_MAX_ROWS})"])
    rows, new = [], []
    for (kind, _), f in sorted(groups.items()):
        if kind == "check":
            rows.append(
                CheckRow(
                    f.get("id", ""), one_line(f.get("text", "")), f.get("tier", ""), "remove" in f
                )
            )
        else:
            new.append(
                NewCheckRow(
                    f.get("id", "").strip(),
                    f.get("item", ""),
                    f.get("kind", ""),
                    f.get("tier", ""),
                    one_line(f.get("text", "")),
                )
            )
    return ChecklistForm(tuple(rows), tuple(new), form.get("comment", "").strip())


def _existing(
    current: Checklist, rows: tuple[CheckRow, ...], errors: list[str]
) -> list[dict[str, Any]]:
    stored = current.by_id()
    seen = {r.id for r in rows}
    errors += [
        f"the form lacks check {cid} (reload the page and edit again)"
        for cid in stored
        if cid not in seen
    ]
    checks = []
    for row in rows:
        if row.id not in stored:
            errors.append(f"check {row.id!r} is not in this checklist (reload the page)")
        elif not row.remove:
            check = stored[row.id]
            if row.text != one_line(check.text):
                # The compiler's data (target, options, threshold) described the old text.
                check = check.without_structure()
            checks.append({**check.model_dump(mode="json"), "text": row.text, "tier": row.tier})
    return checks


def _free_id(item: str, taken: set[str]) -> str:
    n = 1
    while f"{item}/added-{n}" in taken:
        n += 1
    return f"{item}/added-{n}"


def _added(
    meta: MetaRubric, rows: tuple[NewCheckRow, ...], taken: set[str], errors: list[str]
) -> list[dict[str, Any]]:
    items = [item.id for item in meta.items]
    kinds = [k.value for k in CheckKind]
    checks = []
    for n, row in enumerate(rows, start=1):
        if not row.text and not row.id:
            continue
        if row.item not in items:
            errors.append(
                f"new check {n}: item must be one of the meta-rubric's items "
                f"({', '.join(items)}); found {row.item!r}"
            )
            continue
        if row.kind not in kinds:
            errors.append(
                f"new check {n}: kind must be one of {', '.join(kinds)}; found {row.kind!r}"
            )
            continue
        check_id = row.id or _free_id(row.item, taken)
        taken.add(check_id)
        checks.append(
            {"id": check_id, "kind": row.kind, "tier": row.tier, "text": row.text, "item": row.item}
        )
    return checks


def _labelled(details: list[str], labels: list[str]) -> list[str]:
    """``checks[2].text: ...`` -> ``check core/item-3, text: ...`` (people think in ids)."""
    out = []
    for detail in details:
        match = re.match(r"^checks\[(\d+)\]\.?(\w*): (.*)$", detail)
        if match and int(match[1]) < len(labels):
            field = f", {match[2]}" if match[2] else ""
            out.append(f"check {labels[int(match[1])]}{field}: {match[3]}")
        else:
            out.append(detail)
    return out


def apply_form(current: Checklist, meta: MetaRubric, form: ChecklistForm) -> Checklist:
    """The checklist the form describes; ``FormError`` lists every problem at once."""
    errors: list[str] = []
    checks = _existing(current, form.rows, errors)
    checks += _added(meta, form.new, {c.id for c in current.checks}, errors)
    if not checks:
        errors.append(
            "a checklist needs at least one check; if no sound rubric can be made, drop the "
            "question with a reason instead"
        )
        raise FormError(errors)
    data = {"rubric_id": current.rubric_id, "config": current.config.model_dump(), "checks": checks}
    try:
        checklist = Checklist.model_validate(data)
    except pydantic.ValidationError as exc:
        details = [f"{d.path}: {_message(d.rule, d.message)}" for d in pydantic_details(exc)]
        labels = [str(c.get("id") or "(new)") for c in checks]
        raise FormError(errors + _labelled(details, labels)) from None
    if errors:
        raise FormError(errors)
    return checklist


def _message(rule: str, message: str) -> str:
    if rule == "id-pattern":
        return "an id may use letters, digits, '-' and '_', with at most one '/'"
    return message


_BASE = re.compile(r"^(check)-(\d{1,3})-(id|base-text|base-tier)$")


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


def _bases(form: Mapping[str, str]) -> dict[str, Side] | None:
    """The page's version of each check by id; None when the form carries none for a row."""
    bases = {}
    for got in numbered(form, _BASE).values():
        if "id" not in got:
            continue
        if "base-text" not in got or "base-tier" not in got:
            return None
        bases[got["id"]] = Side(got["base-tier"], one_line(got["base-text"]))
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
        theirs = Side(check.tier.value, one_line(check.text))
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
        merged.update({f"new-{j}-{name}": value for name, value in asdict(new).items()})
    return merged, conflicts


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
    if any(getattr(check, f) != getattr(before, f) for f in _FIELDS):  # a field people see
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
