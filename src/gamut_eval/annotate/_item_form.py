"""A meta-rubric item edited through a form of its type, instead of as JSON.

The form has one field per field of the item (statement, name, entity, relation,
thresholds...), the item's citations as a picker of the rubric's evidence ids, and its
list elements, steps, aspects and nested insights as numbered rows (``el-0-text``,
``el-0-cites``, ``mi-0-statement``...): the page adds, removes and reorders rows and
renumbers them; without script a blank row is there to add one. ``item_from_form`` turns
the fields back into the item's JSON object, which is validated with the whole
meta-rubric as any item edit is (``_rubrics.set_item``); blank rows are left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gamut_eval.annotate._errors import FormError

LIST_FIELD = {
    "strict_list": "items",
    "flexible_list": "options",
    "process": "steps",
    "relationship": "aspects",
}
"""The item field each type keeps its rows in (fact and meta-insight items have none)."""
_WITH_INSIGHTS = ("strict_list", "flexible_list", "process")
_ROW = re.compile(r"^(el|mi)-(\d{1,4})-([a-z]+)$")


def _ids(text: str) -> list[str]:
    """Evidence ids from a comma- or space-separated field."""
    return [part for part in re.split(r"[,\s]+", text.strip()) if part]


def _ints(name: str, text: str) -> list[int]:
    try:
        return [int(part) for part in _ids(text)]
    except ValueError:
        raise FormError([f"{name}: whole numbers separated by commas (found {text!r})"]) from None


def _rows(form: Mapping[str, str], prefix: str) -> list[dict[str, str]]:
    """The numbered rows of ``prefix`` (``el`` or ``mi``), in their numbers' order."""
    rows: dict[int, dict[str, str]] = {}
    for key, value in form.items():
        match = _ROW.match(key)
        if match and match.group(1) == prefix:
            rows.setdefault(int(match.group(2)), {})[match.group(3)] = value
    return [rows[i] for i in sorted(rows)]


def _element(row: Mapping[str, str], kind: str) -> dict[str, Any] | None:
    text = row.get("text", "").strip()
    if not text:
        return None
    element: dict[str, Any] = {"text": text}
    if cites := _ids(row.get("cites", "")):
        element["cites"] = cites
    if kind == "process" and row.get("optional"):
        element["required"] = False
    return element


def item_from_form(item_id: str, form: Mapping[str, str]) -> dict[str, Any]:
    """The item's JSON object from the fields of its form."""
    kind = form.get("type", "")
    item: dict[str, Any] = {"id": item_id, "type": kind, "tier": form.get("tier", "")}
    if cites := [key.removeprefix("cite-") for key in form if key.startswith("cite-")]:
        item["cites"] = cites
    if kind in ("fact", "meta_insight"):
        item["statement"] = form.get("statement", "").strip()
        if kind == "meta_insight" and (about := form.get("about", "").strip()):
            item["about"] = about
        return item
    if kind not in LIST_FIELD:
        raise FormError([f"item {item_id}: unknown item type {kind!r}"])
    if kind == "relationship":
        item["entity"] = form.get("entity", "").strip()
        item["relation"] = form.get("relation", "").strip()
    else:
        item["name"] = form.get("name", "").strip()
    rows = [e for row in _rows(form, "el") if (e := _element(row, kind)) is not None]
    if rows or kind != "relationship":
        item[LIST_FIELD[kind]] = rows
    if kind == "flexible_list":
        item["min_required"] = _ints("at least", form.get("min_required", ""))
        if thresholds := _ints("coverage thresholds", form.get("coverage_thresholds", "")):
            item["coverage_thresholds"] = thresholds
    if kind in _WITH_INSIGHTS:
        insights = []
        for row in _rows(form, "mi"):
            statement = row.get("statement", "").strip()
            if not statement:
                continue
            insight: dict[str, Any] = {"statement": statement}
            if row.get("tier"):
                insight["tier"] = row["tier"]
            if cites := _ids(row.get("cites", "")):
                insight["cites"] = cites
            insights.append(insight)
        if insights:
            item["meta_insights"] = insights
    return item


def item_rows(item: Any) -> dict[str, list[dict[str, Any]]]:
    """The rows an item's form shows: its elements (``el``) and nested insights (``mi``),
    each list with one blank row after them, to add one without script."""
    kind = item.type
    elements: list[dict[str, Any]] = []
    if kind in LIST_FIELD:
        for element in getattr(item, LIST_FIELD[kind]):
            elements.append(
                {
                    "text": element.text,
                    "cites": ", ".join(element.cites),
                    "optional": kind == "process" and not element.required,
                }
            )
    insights = [
        {
            "statement": insight.statement,
            "tier": insight.tier.value if insight.tier else "",
            "cites": ", ".join(insight.cites),
        }
        for insight in getattr(item, "meta_insights", ())
    ]
    blank_element = {"text": "", "cites": "", "optional": False}
    blank_insight = {"statement": "", "tier": "", "cites": ""}
    return {
        "el": [*elements, blank_element] if kind in LIST_FIELD else [],
        "mi": [*insights, blank_insight] if kind in _WITH_INSIGHTS else [],
    }
