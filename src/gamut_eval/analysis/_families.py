"""Model families, for self-preference: does a judge favour answers of its own family?

By default a model's family is the provider part of its id (``openai/gpt-4.1`` ->
``openai``), following Inspect AI's naming. For ids routed through a gateway or a serving
engine the provider says nothing about who trained the model, so the next part is used
when there is one: ``vllm/Qwen/Qwen3-VL-235B`` -> ``qwen``,
``openrouter/anthropic/claude-opus`` -> ``anthropic``. Families compare case-insensitively.

A YAML (or JSON) file overrides this: a mapping from a model id, or a glob pattern over
ids, to a family. Exact ids win over patterns; patterns apply in file order::

    google/gemini-3.1-pro: google
    "vllm/Qwen/*": qwen
    "openai-api/deepseek/*": deepseek
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from pathlib import Path

from gamut_eval._files import read_mapping
from gamut_eval.analysis._tables import Row
from gamut_eval.errors import ErrorDetail, ValidationError

__all__ = ["GATEWAYS", "FamilyRow", "family_rows", "load_families", "model_family"]

GATEWAYS: frozenset[str] = frozenset(
    {
        "openai-api",
        "openrouter",
        "vllm",
        "sglang",
        "ollama",
        "together",
        "fireworks",
        "groq",
        "hf",
        "bedrock",
        "azureai",
        "llama-cpp-python",
    }
)
"""Providers that serve other makers' models: their ids name the maker next."""


class FamilyRow(Row):
    """The family a model or judge id was assigned, and from where."""

    model: str
    """Model or judge id."""
    family: str
    """Its family (lower case)."""
    source: str
    """``provider`` (from the id) or ``mapping`` (from the --families file)."""


def model_family(model: str, overrides: Mapping[str, str] | None = None) -> str:
    """The family of a model id: an override if one matches, else the provider part."""
    family = _override(model, overrides or {})
    if family is not None:
        return family
    parts = [p for p in model.split("/") if p]
    if not parts:
        return model.lower()
    if parts[0].lower() in GATEWAYS and len(parts) >= 3:
        return parts[1].lower()
    return parts[0].lower()


def _override(model: str, overrides: Mapping[str, str]) -> str | None:
    if model in overrides:
        return overrides[model].lower()
    for pattern, family in overrides.items():
        if fnmatch.fnmatchcase(model, pattern):
            return family.lower()
    return None


def family_rows(models: Iterable[str], overrides: Mapping[str, str]) -> list[FamilyRow]:
    return [
        FamilyRow(
            model=m,
            family=model_family(m, overrides),
            source="mapping" if _override(m, overrides) is not None else "provider",
        )
        for m in dict.fromkeys(models)
    ]


def load_families(path: str | Path) -> dict[str, str]:
    """Read a family mapping file: ``{model id or glob: family}``, every problem reported."""
    data = read_mapping(path, "families-mapping", "expected a mapping of model id -> family")
    errors = []
    for key, value in data.items():
        if not isinstance(key, str) or not key.strip():
            errors.append(ErrorDetail(str(key), "families-key", "a model id or pattern", key))
        if not isinstance(value, str) or not value.strip():
            errors.append(
                ErrorDetail(str(key), "families-value", "the family must be a name", value)
            )
    if errors:
        raise ValidationError([e.in_file(path) for e in errors])
    return {str(k): str(v).strip() for k, v in data.items()}
