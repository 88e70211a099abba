"""A file of verdict rows as the table ``score_table`` takes, checked before anything is scored.

Identical rows for one (response, check) are kept once (a step appended twice); two rows
for one (response, check) that differ are an error naming how many and the first few.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval._tables import read_rows
from gamut_eval.errors import ErrorDetail, ValidationError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["VERDICT_KEYS", "read_verdict_table", "unique_rows"]

VERDICT_KEYS: tuple[str, ...] = ("question_id", "model", "setting", "judge", "check_id")
"""What identifies one verdict row (the fields of these present in a row)."""
_REQUIRED = ("question_id", "check_id", "verdict")
_LISTED = 5


def unique_rows(
    rows: Iterable[tuple[int, dict[str, Any]]], keys: Sequence[str], what: str = "verdict"
) -> list[dict[str, Any]]:
    """The rows with identical repeats dropped; a ``ValidationError`` when two rows with
    the same ``keys`` differ (giving the count and the first few, with their row numbers)."""
    first: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}
    conflicts: list[ErrorDetail] = []
    kept = []
    for number, row in rows:
        key = tuple(row.get(k) for k in keys)
        if key not in first:
            first[key] = (number, row)
            kept.append(row)
        elif first[key][1] != row:
            conflicts.append(
                ErrorDetail(
                    f"row {number}",
                    f"unique-{what}",
                    f"differs from row {first[key][0]}, which has the same "
                    + ", ".join(k for k in keys if k in row),
                    dict(zip(keys, key, strict=True)),
                )
            )
    if conflicts:
        summary = ErrorDetail(
            "$",
            f"unique-{what}",
            f"{len(conflicts)} {what} row(s) repeat an earlier row's identity with different "
            f"content; keep one row each. The first {min(len(conflicts), _LISTED)} follow",
        )
        raise ValidationError([summary, *conflicts[:_LISTED]])
    return kept


def read_verdict_table(path: str | Path) -> pd.DataFrame:
    """Verdict rows of a JSONL, JSON or Parquet file as a DataFrame, checked: every row
    has ``question_id``, ``check_id`` and ``verdict``; identical repeats are dropped,
    differing ones refused. Errors name ``path``."""
    import pandas as pd

    path = Path(path)
    absent: list[ErrorDetail] = []
    try:
        rows = unique_rows(_with_required(read_rows(path, what="verdicts"), absent), VERDICT_KEYS)
        if absent:
            raise ValidationError(_absent_summary(absent))
        if not rows:
            raise ValidationError([ErrorDetail("$", "non-empty", "the verdicts file has no rows")])
    except ValidationError as exc:
        raise ValidationError([d if d.file else d.in_file(path) for d in exc.details]) from None
    frame = pd.DataFrame(rows)
    frame["verdict"] = frame["verdict"].astype(object).where(frame["verdict"].notna(), None)
    return frame


def _with_required(
    rows: Iterable[tuple[int, dict[str, Any]]], absent: list[ErrorDetail]
) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, row in rows:
        lacking = [f for f in _REQUIRED if f not in row]
        if lacking:
            absent.append(
                ErrorDetail(f"row {number}", "required", f"lacks {', '.join(lacking)}", row)
            )
        else:
            yield number, row


def _absent_summary(absent: list[ErrorDetail]) -> list[ErrorDetail]:
    summary = ErrorDetail(
        "$",
        "required",
        f"{len(absent)} verdict row(s) lack a required field (each needs "
        f"{', '.join(_REQUIRED)}); the first {min(len(absent), _LISTED)} follow",
    )
    return [summary, *absent[:_LISTED]]
