"""Candidate answers: one row per (question, model, setting), in a JSONL, JSON or Parquet table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pydantic
from pydantic import BaseModel, ConfigDict

from gamut_eval._tables import read_rows
from gamut_eval.errors import LISTED, ErrorDetail, ValidationError
from gamut_eval.rubric import pydantic_details

__all__ = [
    "FILLED_KEY",
    "SETTINGS",
    "CompleteResponses",
    "ResponseKey",
    "ResponseRow",
    "check_responses",
    "complete_responses",
    "iter_responses",
]

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

    @pydantic.field_validator("model")
    @classmethod
    def _named(cls, model: str) -> str:
        if not model.strip():
            raise ValueError("a model needs a name (an empty one would be scored as a model)")
        return model


def iter_responses(path: str | Path) -> Iterator[tuple[int, ResponseRow]]:
    """Stream ``(line, row)``; assumes ``check_responses`` passed."""
    for line, data in read_rows(path, what="responses"):
        yield line, ResponseRow.model_validate(data)


def check_responses(path: str | Path, question_ids: set[str]) -> Counter[str]:
    """Validate every row (fields, known question, no duplicates); return rows per question.

    Streams the file, keeping only the identities seen, and raises one ``ValidationError``
    listing every problem.
    """
    errors: list[ErrorDetail] = []
    seen: dict[tuple[str, str, str], int] = {}
    count: Counter[str] = Counter()
    for line, data in read_rows(path, what="responses", errors=errors):
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


class ResponseKey(NamedTuple):
    """What identifies one response: question, model, setting."""

    question_id: str
    model: str
    setting: str


FILLED_KEY = "filled_missing"
"""``metadata`` key set to true on an empty answer put in for a response that was absent."""


@dataclass(frozen=True)
class CompleteResponses:
    """The responses of a run checked against its grid (questions x models x settings)."""

    rows: tuple[ResponseRow, ...]
    """One row per cell of the grid: the rows given (identical duplicates once), in their
    order, then the filled ones in grid order."""
    filled: tuple[ResponseKey, ...]
    """Cells that had no answer and were filled with an empty one (``fill_missing``)."""
    collapsed: int
    """Rows dropped because an identical row for the same cell came earlier."""


def _listed(keys: Sequence[ResponseKey]) -> str:
    shown = "; ".join(f"({k.question_id!r}, {k.model!r}, {k.setting!r})" for k in keys[:LISTED])
    more = f" and {len(keys) - LISTED} more" if len(keys) > LISTED else ""
    return shown + more


_GRID_PROBLEMS = (
    (
        "$",
        "response-present",
        "{n} (question, model, setting) of the grid have no answer: {listed}; rerun generation "
        "for them, or (in a run) set fill_missing to score them as empty answers (the model "
        "said nothing)",
    ),
    (
        "question_id",
        "known-question",
        "{n} answer(s) are for questions not in the dataset: {listed}",
    ),
    (
        "$",
        "unique-response",
        "{n} (question, model, setting) have two rows that differ: {listed}; keep one answer "
        "per cell",
    ),
    ("$", "in-grid", "{n} answer(s) are for a model or setting not asked for: {listed}"),
)
"""Where, rule and message of each problem of ``complete_responses``, in the order given."""


def complete_responses(
    rows: Iterable[ResponseRow],
    question_ids: Collection[str],
    models: Sequence[str] | None = None,
    settings: Sequence[str] | None = None,
    *,
    fill_missing: bool = False,
    source: str | Path | None = None,
) -> CompleteResponses:
    """Check that ``rows`` answer every (question, model, setting) exactly once.

    The grid is ``question_ids`` x ``models`` x ``settings`` (``None``: the models or the
    settings the rows name). Raises one ``ValidationError`` that gives the count and the
    first few of each problem: cells without an answer (unless ``fill_missing``), answers
    to questions not in ``question_ids``, answers for models or settings outside the grid,
    and two rows for one cell that differ. Identical
    rows for one cell are kept once. With ``fill_missing`` a missing cell gets an empty
    answer (the model said nothing: it scores as missing, never as unscored), marked with
    ``metadata[FILLED_KEY] = True`` and listed in ``filled``. ``source`` names the file in
    messages.
    """
    kept: dict[ResponseKey, ResponseRow] = {}
    unknown: list[ResponseKey] = []
    conflicting: dict[ResponseKey, None] = {}
    collapsed = 0
    known = set(question_ids)
    for row in rows:
        key = ResponseKey(row.question_id, row.model, row.setting)
        if row.question_id not in known:
            unknown.append(key)
        elif key in kept:
            if kept[key] == row:
                collapsed += 1
            else:
                conflicting[key] = None
        else:
            kept[key] = row
    models = list(dict.fromkeys(k.model for k in kept)) if models is None else list(models)
    settings = list(dict.fromkeys(k.setting for k in kept)) if settings is None else list(settings)
    grid = [
        ResponseKey(q, m, s) for q in dict.fromkeys(question_ids) for m in models for s in settings
    ]
    missing = [k for k in grid if k not in kept]
    outside = [k for k in kept if k.model not in models or k.setting not in settings]
    if (missing and not fill_missing) or unknown or conflicting or outside:
        found = ([] if fill_missing else missing, unknown, list(conflicting), outside)
        errors = [
            ErrorDetail(where, rule, text.format(n=len(keys), listed=_listed(keys))).in_file(source)
            for keys, (where, rule, text) in zip(found, _GRID_PROBLEMS, strict=True)
            if keys
        ]
        gaps = missing and not fill_missing
        raise ValidationError(errors, setting="fill_missing" if gaps else None)
    filled = tuple(missing)
    extra = tuple(
        ResponseRow.model_validate({**k._asdict(), "response": "", "metadata": {FILLED_KEY: True}})
        for k in filled
    )
    return CompleteResponses(rows=(*kept.values(), *extra), filled=filled, collapsed=collapsed)
