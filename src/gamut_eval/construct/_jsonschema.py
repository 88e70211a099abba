"""JSON Schemas of the model replies, in the subset Inspect's ``ResponseSchema`` carries.

Inspect's ``JSONSchema`` has no ``$ref``/``$defs``, ``oneOf`` or ``const``: a Pydantic schema
handed over as is loses every referenced definition (the meta-rubric's items would become
``{}``). ``inline_schema`` resolves references and rewrites ``oneOf`` as ``anyOf`` and
``const`` as a one-value ``enum``, so the provider sees the real structure. The reply is
still validated by our own models afterwards: the schema only helps the model.
"""

from __future__ import annotations

from typing import Any

from gamut_eval.rubric import meta_rubric_json_schema

__all__ = ["inline_schema", "object_schema", "rebuild_reply_schema", "rubric_items_schema"]

_MAX_DEPTH = 32


def inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its definition (no recursion)."""
    defs = schema.get("$defs", {})
    top = {k: v for k, v in schema.items() if k not in ("$defs", "$schema", "$id")}
    resolved: dict[str, Any] = _resolve(top, defs)
    return resolved


def _resolve(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("schema nests too deeply (a recursive $ref?)")
    if isinstance(node, list):
        return [_resolve(n, defs, depth + 1) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        merged = {
            **defs[ref.removeprefix("#/$defs/")],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
        return _resolve(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "oneOf":
            out["anyOf"] = _resolve(value, defs, depth + 1)
        elif key == "const":
            out["enum"] = [value]
        elif key in ("discriminator", "title"):
            continue
        else:
            out[key] = _resolve(value, defs, depth + 1)
    return out


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """A closed JSON object schema."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


def rubric_items_schema() -> dict[str, Any]:
    """``{"items": [...]}``: the items of a meta-rubric, as the draft writes them."""
    schema = inline_schema(meta_rubric_json_schema())
    return object_schema({"items": schema["properties"]["items"]})


def rebuild_reply_schema() -> dict[str, Any]:
    """The rebuild's reply: the refined items and the drops with their reasons."""
    drop = object_schema({"item": {"type": "string"}, "reason": {"type": "string"}})
    items = rubric_items_schema()["properties"]["items"]
    return object_schema({"items": items, "dropped": {"type": "array", "items": drop}})
