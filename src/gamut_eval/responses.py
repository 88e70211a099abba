"""Candidate answers: one JSONL row per (question, model, setting)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict

from gamut_eval._files import read_jsonl
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric._load import pydantic_details

__all__ = ["SETTINGS", "ResponseRow", "check_responses", "iter_responses"]

SETTINGS = ("multimodal", "text_only")


class ResponseRow(BaseModel):
    """One model's answer to one question in one setting."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    question_id: str
    """Id of the dataset record."""
    model: str
    """Full model id, e.g. ``openai/gpt-4.1``."""
    setting: Literal["multimodal", "text_only"]
    """With the image, or with the entity named in text."""
    response: str
    """The answer (may be empty: an empty answer scores as missing, it is not an error)."""
    usage: dict[str, Any] | None = None
    """Token usage reported by the provider, when known."""
    metadata: dict[str, Any] = {}
    """Free-form extra fields (e.g. ``illustrative: true``)."""


def iter_responses(path: str | Path) -> Iterator[tuple[int, ResponseRow]]:
    """Stream ``(line, row)``; assumes ``check_responses`` passed."""
    for line, data in read_jsonl(path):
        yield line, ResponseRow.model_validate(data)


def check_responses(path: str | Path, question_ids: set[str]) -> Counter[str]:
    """Validate every row (fields, known question, no duplicates); return rows per question.

    Streams the file, keeping only the identities seen, and raises one ``ValidationError``
    listing every problem.
    """
    errors: list[ErrorDetail] = []
    seen: dict[tuple[str, str, str], int] = {}
    count: Counter[str] = Counter()
    for line, data in read_jsonl(path, errors):
        where = f"{path}:{line}"
        try:
            row = ResponseRow.model_validate(data)
        except pydantic.ValidationError as exc:
            errors += [d.in_file(where) for d in pydantic_details(exc)]
            continue
        count[row.question_id] += 1
        if row.question_id not in question_ids:
            errors.append(
                ErrorDetail(
                    "question_id",
                    "known-question",
                    "no such question in the dataset",
                    row.question_id,
                ).in_file(where)
            )
        identity = (row.question_id, row.model, row.setting)
        if identity in seen:
            errors.append(
                ErrorDetail(
                    "$",
                    "unique-response",
                    f"same question, model and setting as line {seen[identity]}",
                    list(identity),
                ).in_file(where)
            )
        seen.setdefault(identity, line)
    if errors:
        raise ValidationError(errors)
    if not count:
        raise ValidationError(
            [ErrorDetail("$", "non-empty", "the responses file has no rows").in_file(path)]
        )
    return count
