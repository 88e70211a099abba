"""Loading and validating meta-rubrics, reporting every problem of a file at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
from pydantic import TypeAdapter

from gamut_eval._files import read_document
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric._model import ITEM_TYPES, Item, MetaRubric
from gamut_eval.rubric._rules import rule_errors

__all__ = ["load_meta_rubric", "pydantic_details", "validate_meta_rubric"]

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
    """Drop the discriminator tag Pydantic inserts after a union member's index."""
    out: list[str | int] = []
    for part in loc:
        if isinstance(part, str) and out and isinstance(out[-1], int) and part in ITEM_TYPES:
            continue
        if isinstance(part, str) and part.startswith(("function-", "tuple[")):
            continue
        out.append(part)
    return tuple(out)


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
    from gamut_eval.errors import json_path

    details = []
    for error in exc.errors():
        loc = _clean_loc(tuple(error["loc"]))
        kind = error["type"]
        rule = _RULE_NAMES.get(kind, kind.replace("_", "-"))
        if kind == "missing":
            details.append(ErrorDetail(json_path(loc), rule, _message(error)))
        else:
            value = loc[-1] if kind == "extra_forbidden" and loc else error.get("input")
            details.append(ErrorDetail(json_path(loc), rule, _message(error), value))
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
    parsed = []
    for i, raw in enumerate(items if isinstance(items, list) else []):
        try:
            parsed.append((i, _ITEM.validate_python(raw)))
        except pydantic.ValidationError:
            continue
    return rule_errors(evidence_ids, parsed)


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
