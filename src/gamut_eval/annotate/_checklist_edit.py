"""The checklist editor's form: parse it, apply it to the stored checklist, validate.

The form carries, per existing check, only what a person may edit (text, tier, remove);
kind, item, secondary flag and citations come from the stored checklist, so a tampered
form cannot rewrite them. A check whose text is edited loses the compiler's structured
data (``target``, ``options``, ``at_least``), which described the old text. New checks
name a meta-rubric item, a kind, a tier and a text.
Every problem is reported at once, by check id, never as a crash.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

from gamut_eval.annotate._errors import FormError
from gamut_eval.rubric import CheckKind, Checklist, MetaRubric, pydantic_details

__all__ = ["CheckRow", "ChecklistForm", "NewCheckRow", "apply_form", "parse_checklist_form"]

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


def _one_line(text: str) -> str:
    """A check is one statement: line breaks and runs of spaces from a textarea collapse."""
    return " ".join(text.split())


def parse_checklist_form(form: Mapping[str, str]) -> ChecklistForm:
    """Group ``check-3-text``-style fields into rows, in index order."""
    groups: dict[tuple[str, int], dict[str, str]] = {}
    for key, value in form.items():
        match = _FIELD.match(key)
        if match:
            groups.setdefault((match[1], int(match[2])), {})[match[3]] = value
    if len(groups) > _MAX_ROWS:
        raise FormError([f"too many rows in one save ({len(groups)}; at most {_MAX_ROWS})"])
    rows, new = [], []
    for (kind, _), f in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if kind == "check":
            rows.append(
                CheckRow(
                    f.get("id", ""), _one_line(f.get("text", "")), f.get("tier", ""), "remove" in f
                )
            )
        else:
            new.append(
                NewCheckRow(
                    f.get("id", "").strip(),
                    f.get("item", ""),
                    f.get("kind", ""),
                    f.get("tier", ""),
                    _one_line(f.get("text", "")),
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
            if row.text != _one_line(check.text):
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
