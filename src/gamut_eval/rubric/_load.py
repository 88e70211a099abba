"""Loading and validating meta-rubrics, reporting every problem of a file at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
from pydantic import TypeAdapter

from gamut_eval._files import read_document
from gamut_eval.errors import ErrorDetail, ValidationError, json_path
from gamut_eval.rubric._model import ITEM_TYPES, Item, MetaRubric, rule_errors

_ITEM = TypeAdapter(Item)

_RULE_NAMES = {
    "missing": "required",
    "extra_forbidden": "unknown-field",
    "union_tag_invalid": "item-type",
    "union_tag_not_found": "item-type",
    "literal_error": "allowed-value",
    "enum": "allowed-value",
    "string_pattern_mismatch": "id-pattern",
    "too_short": "min-length",
    "too_long": "max-length",
}


def _clean_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """Drop the discriminator tag Pydantic inserts after an item's index (``items[2].fact``)
    and the names of wrapper validators; nothing else."""
    parts = [p for p in loc if not (isinstance(p, str) and p.startswith(("function-", "tuple[")))]
    if (
        len(parts) > 2
        and parts[0] == "items"
        and isinstance(parts[1], int)
        and parts[2] in ITEM_TYPES
    ):
        del parts[2]
    return tuple(parts)


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling against the schema: `gamut schema`)"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"`type` must be one of: {', '.join(ITEM_TYPES)}"
    return str(error["msg"])


def pydantic_details(exc: pydantic.ValidationError) -> list[ErrorDetail]:
    """Pydantic's errors as ``ErrorDetail``s with clean JSON paths and rule names."""
    errors = exc.errors()
    locs = [_clean_loc(tuple(e["loc"])) for e in errors]
    details = []
    for error, loc in zip(errors, locs, strict=True):
        kind = error["type"]
        if kind == "too_short" and any(other[: len(loc)] == loc and other != loc for other in locs):
            continue  # "0 items after validation" only echoes the failing elements' own errors
        rule = _RULE_NAMES.get(kind, kind.replace("_", "-"))
        message = _message(error)
        if kind == "string_pattern_mismatch" and (error.get("ctx") or {}).get("pattern") == r"\S":
            rule, message = "non-empty", "must not be empty or only whitespace"
        value = error.get("input")
        if kind == "extra_forbidden" and loc:
            value = loc[-1]
        elif kind == "union_tag_invalid":
            loc = (*loc, "type")
            value = value.get("type") if isinstance(value, dict) else value
        if kind == "missing":
            details.append(ErrorDetail(json_path(loc), rule, message))
        else:
            details.append(ErrorDetail(json_path(loc), rule, message, value))
    return details


def _surviving_rule_errors(data: dict[str, Any]) -> list[ErrorDetail]:
    """Cross-field rules on the parts of a structurally broken document that did parse."""
    evidence = data.get("evidence")
    items = data.get("items")
    evidence_ids = [
        (i, e["id"])
        for i, e in enumerate(evidence if isinstance(evidence, list) else [])
        if isinstance(e, dict) and isinstance(e.get("id"), str)
    ]
    raw_items = [
        (i, raw)
        for i, raw in enumerate(items if isinstance(items, list) else [])
        if isinstance(raw, dict)
    ]
    parsed = []
    for i, raw in raw_items:
        try:
            parsed.append((i, _ITEM.validate_python(raw)))
        except pydantic.ValidationError:
            continue
    # Ids and types of items that did not parse still count for `about` and duplicates,
    # and their citations are still checked.
    item_ids = [
        (i, raw["id"], raw.get("type")) for i, raw in raw_items if isinstance(raw.get("id"), str)
    ]
    known = {eid for _, eid in evidence_ids}
    parsed_indices = {i for i, _ in parsed}
    broken = [(i, raw) for i, raw in raw_items if i not in parsed_indices]
    errors = rule_errors(evidence_ids, parsed, item_ids)
    for i, raw in broken:
        errors += _raw_cite_errors(("items", i), raw, known)
    return errors


def _raw_cite_errors(loc: tuple[str | int, ...], node: Any, known: set[str]) -> list[ErrorDetail]:
    """Unknown citations anywhere inside an unparsed item (every ``cites`` list of strings)."""
    errors = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "cites" and isinstance(value, list):
                errors += [
                    ErrorDetail(
                        json_path((*loc, key, j)),
                        "cite-exists",
                        "cites an evidence id that is not in `evidence`",
                        cite,
                    )
                    for j, cite in enumerate(value)
                    if isinstance(cite, str) and cite not in known
                ]
            else:
                errors += _raw_cite_errors((*loc, key), value, known)
    elif isinstance(node, list):
        for j, value in enumerate(node):
            errors += _raw_cite_errors((*loc, j), value, known)
    return errors


def validate_meta_rubric(data: Any, file: str | Path | None = None, prefix: str = "") -> MetaRubric:
    """Validate a parsed document; raise ``ValidationError`` listing every problem.

    ``prefix`` locates the document inside a larger one (``meta_rubric`` in a dataset row).
    """
    try:
        return MetaRubric.model_validate(data)
    except ValidationError as exc:
        details = exc.details
    except pydantic.ValidationError as exc:
        details = pydantic_details(exc)
        if isinstance(data, dict):
            details += _surviving_rule_errors(data)
    raise ValidationError([d.in_file(file, prefix) for d in details])


def load_meta_rubric(path: str | Path) -> MetaRubric:
    """Load a meta-rubric from a YAML or JSON file and validate it."""
    return validate_meta_rubric(read_document(path), file=path)
