"""JSON Schema of the meta-rubric, so editors can autocomplete and validate YAML."""

from __future__ import annotations

from typing import Any

from gamut_eval.rubric._model import MetaRubric

SCHEMA_ID = "https://gamut-eval.dev/schema/meta-rubric.schema.json"


def meta_rubric_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a meta-rubric document.

    It covers the structure; rules that span fields (unique ids, references, threshold
    ranges) are checked by ``gamut validate``.
    """
    schema = MetaRubric.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
    }
