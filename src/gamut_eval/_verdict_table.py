"""The one reader of a verdict table: the columns a caller needs, read once, checked.

Every command that reads verdict rows (``gamut score``, the scoring step of ``gamut run``,
``gamut report`` and its drill-down, ``gamut_eval.load_run``) reads them here:

    read_verdict_table(path)                       keys, check and verdict (for scoring)
    read_verdict_table(path, explanations=True)    ... and the judges' explanations
    read_verdict_table(path, fields=None)          every field (``load_run``)

A JSONL file is parsed by pyarrow's multithreaded reader with an explicit schema, so the
fields not asked for (explanations, usage, reasons) are skipped while parsing and never
become Python objects; a paper-scale file (1.5 million rows a judge) is read in seconds and
held in tens of megabytes, as dictionary-encoded (categorical) columns. JSON arrays and
Parquet files are read too (Parquet column by column).

Checked, in one pass over the columns: the file has rows, ``question_id`` and ``check_id``
are in every row, some row has a verdict, and identical repeats of one (response, check)
row are kept once (a step appended twice) while differing ones are refused. Whenever a
check fails, or pyarrow cannot read the file (a line that does not parse, a field of
another type, a byte-order mark), the file is read again by the strict row reader, which
names the line, field and value; that second read happens only for a file that is wrong.

A row without a ``verdict`` field reads as a null verdict (unscored), as in Parquet, which
cannot tell an absent field from a null one; two rows are "identical" when the fields
read are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval._tables import read_rows, table_format
from gamut_eval.errors import LISTED, ErrorDetail, InputError, ValidationError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

VERDICT_KEYS: tuple[str, ...] = ("question_id", "model", "setting", "judge", "check_id")
"""What identifies one verdict row (the fields of these present in a row)."""
SCORED_FIELDS: tuple[str, ...] = (*VERDICT_KEYS, "verdict")
"""The fields scoring needs, and what ``read_verdict_table`` reads by default."""
_REQUIRED = ("question_id", "check_id")
_TEXT = (*SCORED_FIELDS, "explanation")
_BLOCK_BYTES = 8 << 20
"""Bytes of JSONL parsed per block: large enough to keep pyarrow's threads busy, small
enough that a few blocks in flight cost little beside the table."""


@dataclass(frozen=True)
class VerdictTable:
    """Verdict rows as read and checked by :func:`read_verdict_table`."""

    path: Path
    frame: pd.DataFrame
    """The fields read (those the file has), string fields as categoricals; ``verdict``
    is null for an unscored check."""
    explanations: pa.ChunkedArray | None = None
    """The judges' explanations, row for row with ``frame``, kept in Arrow (asked for
    with ``explanations=True``; None when not asked for or the file has none)."""

    def __len__(self) -> int:
        return len(self.frame)


def read_verdict_table(
    path: str | Path,
    *,
    fields: Sequence[str] | None = SCORED_FIELDS,
    explanations: bool = False,
) -> VerdictTable:
    """The verdict rows of a JSONL, JSON or Parquet file, checked (see the module).

    ``fields``: the fields to read (None: all the file has); ``explanations`` adds the
    ``explanation`` field, kept apart in Arrow. Errors name ``path`` and, where there is
    one, the line and field; all are ``InputError`` (exit code 2).
    """
    path = Path(path)
    fmt = table_format(path)
    wanted = None if fields is None else [*fields, *(["explanation"] if explanations else [])]
    table = None
    if fmt == "jsonl":
        table = _arrow_jsonl(path, wanted)
    elif fmt == "parquet":
        table = _arrow_parquet(path, wanted)
    if table is None and fmt == "jsonl":
        for _ in read_rows(path, what="verdicts"):  # a line that does not parse is named
            pass  # here, streaming, before anything is held in memory
    if table is None or not _fits(table):
        table = _checked_rows(path, wanted)  # the strict reader: raises naming the row
    return _verdict_table(path, table, explanations)


def _arrow_jsonl(path: Path, fields: Sequence[str] | None) -> pa.Table | None:
    """The file through pyarrow's streaming JSON reader, block by block (memory bounded
    by a few blocks, not by the file), short text fields dictionary-encoded as each block
    arrives; None when pyarrow cannot read it."""
    import pyarrow as pa
    import pyarrow.json as pj  # type: ignore[import-untyped]

    try:
        size = path.stat().st_size
    except OSError:
        return None  # the row reader names what is wrong with the path
    if size == 0:
        return None
    if fields is None:
        options = pj.ParseOptions()
    else:
        schema = pa.schema([(name, pa.string()) for name in dict.fromkeys(fields)])
        options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    blocks = pj.ReadOptions(block_size=_BLOCK_BYTES)
    try:
        batches = [
            _encoded(b) for b in pj.open_json(path, read_options=blocks, parse_options=options)
        ]
        if not batches:
            return None
        table: pa.Table = pa.Table.from_batches(batches)
        table.validate(full=True)  # pyarrow reads bytes that are not UTF-8 into its text
    except (pa.ArrowException, OSError):
        return None  # the row reader names what is wrong, and where
    return table


def _encoded(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its string fields dictionary-encoded, explanations left as text."""
    import pyarrow as pa

    columns = [
        column if name == "explanation" else _categorical(column)
        for name, column in zip(batch.schema.names, batch.columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _categorical(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A text column dictionary-encoded (a categorical in pandas); others as they are."""
    import pyarrow as pa

    kind = column.type
    textual = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    return column.dictionary_encode() if textual else column


def _arrow_parquet(path: Path, fields: Sequence[str] | None) -> pa.Table | None:
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    try:
        with path.open("rb") as handle:
            if handle.read(4) != b"PAR1":
                return None
        names = pq.read_schema(path).names
        columns = None if fields is None else [f for f in dict.fromkeys(fields) if f in names]
        table: pa.Table = pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError):
        return None
    string_fields = [f for f in table.schema if f.name in SCORED_FIELDS or f.name == "explanation"]
    if not all(_textual(f.type) for f in string_fields):
        return None  # ids or verdicts of another type: the row reader says which
    return table


def _textual(kind: pa.DataType) -> bool:
    """Text (pandas writes ``large_string``), null, or text stored as a dictionary (a
    categorical column)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)
    )


def _fits(table: pa.Table) -> bool:
    """Whether the fast read passes every check (else the row reader explains why not)."""
    if table.num_rows == 0:
        return False
    for name in _REQUIRED:
        if name not in table.column_names or table.column(name).null_count:
            return False
    if "verdict" in table.column_names:
        verdicts = table.column("verdict")
        if verdicts.null_count == len(verdicts):
            return False
    return True


def _checked_rows(path: Path, fields: Sequence[str] | None) -> pa.Table:
    """The strict row reader: rows checked one by one, errors naming the row."""
    import pyarrow as pa

    bad: list[ErrorDetail] = []
    keep = None if fields is None else set(fields)
    try:
        rows = (
            (n, row if keep is None else {k: v for k, v in row.items() if k in keep})
            for n, row in read_rows(path, what="verdicts")
        )
        kept = unique_rows(_well_formed(rows, bad), VERDICT_KEYS)
        if bad:
            raise ValidationError(_bad_summary(bad))
        if not kept:
            raise ValidationError([ErrorDetail("$", "non-empty", "the verdicts file has no rows")])
        if all(row.get("verdict") is None for row in kept):
            raise ValidationError(
                [
                    ErrorDetail(
                        "verdict",
                        "some-verdict",
                        "no row has a verdict (every check would be unscored); is the field "
                        "named `verdict`?",
                    )
                ]
            )
    except ValidationError as exc:
        raise ValidationError([d if d.file else d.in_file(path) for d in exc.details]) from None
    names = list(dict.fromkeys(k for row in kept for k in row))
    try:
        return pa.Table.from_pydict({n: [row.get(n) for row in kept] for n in names})
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise InputError(f"{path}: these verdict rows do not form a table ({exc})") from None


def _verdict_table(path: Path, table: pa.Table, explanations: bool) -> VerdictTable:
    """Identical repeats dropped, differing ones refused; string fields categorical."""
    import pyarrow as pa

    apart = explanations and "explanation" in table.column_names
    text = table.column("explanation") if apart else None
    names = [n for n in table.column_names if not (apart and n == "explanation")]
    encoded = pa.table({n: _categorical(table.column(n)) for n in names})
    del table
    frame: pd.DataFrame = encoded.to_pandas()
    del encoded
    keys = [k for k in VERDICT_KEYS if k in frame.columns]
    repeated = frame.duplicated(subset=keys)
    if repeated.any():
        if (repeated & ~frame.duplicated()).any():
            _checked_rows(path, [*frame.columns])  # raises, naming the rows that differ
        frame = frame[~repeated].reset_index(drop=True)
        if text is not None:
            text = text.filter(pa.array(~repeated.to_numpy()))
    return VerdictTable(path=path, frame=frame, explanations=text)


def unique_rows(
    rows: Iterable[tuple[int, dict[str, Any]]], keys: Sequence[str]
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
                    "unique-verdict",
                    f"differs from row {first[key][0]}, which has the same "
                    + ", ".join(k for k in keys if k in row),
                    dict(zip(keys, key, strict=True)),
                )
            )
    if conflicts:
        summary = ErrorDetail(
            "$",
            "unique-verdict",
            f"{len(conflicts)} verdict row(s) repeat an earlier row's identity with different "
            f"content; keep one row each. The first {min(len(conflicts), LISTED)} follow",
        )
        raise ValidationError([summary, *conflicts[:LISTED]])
    return kept


def _well_formed(
    rows: Iterable[tuple[int, dict[str, Any]]], bad: list[ErrorDetail]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows with the required fields, and text where text belongs; the others are
    noted in ``bad``."""
    for number, row in rows:
        lacking = [f for f in _REQUIRED if row.get(f) is None]
        if lacking:
            bad.append(ErrorDetail(f"row {number}", "required", f"lacks {', '.join(lacking)}", row))
            continue
        typed = [f for f in _TEXT if row.get(f) is not None and not isinstance(row[f], str)]
        if typed:
            bad.append(
                ErrorDetail(
                    f"row {number}", "string", f"`{typed[0]}` must be a string", row[typed[0]]
                )
            )
            continue
        yield number, row


def _bad_summary(bad: list[ErrorDetail]) -> list[ErrorDetail]:
    summary = ErrorDetail(
        "$",
        "well-formed",
        f"{len(bad)} verdict row(s) lack a required field ({', '.join(_REQUIRED)}) or hold "
        f"a non-text value where text belongs; the first {min(len(bad), LISTED)} follow",
    )
    return [summary, *bad[:LISTED]]
