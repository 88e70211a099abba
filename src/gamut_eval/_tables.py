"""Tables of rows on disk (datasets, answers, verdicts, scores): one reader, one writer.

    read_rows(path, what="responses")  -> (row number, dict) for each row, streamed
    write_rows(path, rows)             -> rows written, atomically

The format is chosen by the extension and checked against the content:

    .jsonl    one JSON object per line (UTF-8; a byte-order mark and CRLF are accepted)
    .json     one JSON array of objects
    .parquet  Apache Parquet (the file starts and ends with the magic bytes ``PAR1``)

An unknown extension is an error, never a guess; a ``.parquet`` file that is not Parquet,
or a ``.jsonl``/``.json`` file that is, is an error naming the file. A JSONL file cut
mid-line (a writer that crashed) is an error naming the line, never a skipped row; bytes
that are not UTF-8 are an error naming the byte offset. Every error is an ``InputError``
(a ``ValidationError`` with file, path and rule where there is a location), so the CLI
exits 2.

Row numbers are the line for JSONL and the 1-based position in the array or file for JSON
and Parquet; callers put them in messages as ``f"{path}:{number}"``.

Parquet stores a column per field: nested objects whose keys differ between rows come
back with null for the keys a row lacked, and a field that is ``{}`` in every row is not
stored at all (Parquet has no empty struct). Records with free-form nested data (datasets,
answers with metadata) are safest in JSONL.

pyarrow is imported only when a Parquet file is read or written, so importing this module
stays cheap.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from gamut_eval._files import (
    BAD,
    MAX_LINE_BYTES,
    atomic_writer,
    json_error,
    jsonl_line,
    long_line,
    parse_json,
)
from gamut_eval.errors import ErrorDetail, InputError, ValidationError

if TYPE_CHECKING:
    import pandas as pd

TableFormat = Literal["jsonl", "json", "parquet"]
FORMATS: dict[str, TableFormat] = {".jsonl": "jsonl", ".json": "json", ".parquet": "parquet"}
"""File extension (lower case) -> table format."""

_PARQUET_MAGIC = b"PAR1"
_BOM = b"\xef\xbb\xbf"


def table_format(path: str | Path) -> TableFormat:
    """The format ``path``'s extension names; an ``InputError`` for any other extension."""
    path = Path(path)
    found = FORMATS.get(path.suffix.lower())
    if found is None:
        allowed = ", ".join(FORMATS)
        raise InputError(
            f"{path}: unknown table format {path.suffix or '(no extension)'!r}; "
            f"name the file with one of {allowed}"
        )
    return found


def _error(path: Path, where: str, rule: str, message: str, value: Any = None) -> ValidationError:
    detail = (
        ErrorDetail(where, rule, message)
        if value is None
        else ErrorDetail(where, rule, message, value)
    )
    return ValidationError([detail.in_file(path)])


def _open(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None


def _check_content(path: Path, fmt: TableFormat, head: bytes) -> None:
    is_parquet = head.startswith(_PARQUET_MAGIC)
    if fmt == "parquet" and not is_parquet:
        raise _error(
            path, "$", "parquet-magic", "named .parquet but is not a Parquet file (no PAR1)"
        )
    if fmt != "parquet" and is_parquet:
        raise _error(
            path, "$", "format-match", f"named .{fmt} but is a Parquet file; rename it .parquet"
        )


def read_rows(
    path: str | Path,
    *,
    what: str = "responses",
    errors: list[ErrorDetail] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(row number, row)`` for each row of a JSONL, JSON or Parquet table.

    ``what`` names the rows in messages ("each verdicts row must be a JSON object").
    With an ``errors`` list, problems of single rows (a line that does not parse, a row
    that is not an object) are appended there and reading goes on, so a validator can
    report every bad row; without one, the first raises. Problems of the whole file
    (format, encoding) always raise. Streams JSONL and Parquet.
    """
    path = Path(path)
    fmt = table_format(path)
    with _open(path) as handle:
        _check_content(path, fmt, handle.read(len(_PARQUET_MAGIC)))
        handle.seek(0)
        if fmt == "jsonl":
            yield from _jsonl_rows(path, handle, what, errors)
        elif fmt == "json":
            yield from _json_rows(path, handle.read(), what, errors)
        else:
            yield from _parquet_rows(path, handle, what)


def _decode(path: Path, raw: bytes, offset: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error(
            path,
            f"byte {offset + exc.start}",
            "utf-8",
            f"not UTF-8 text ({exc.reason}); save the file as UTF-8",
        ) from None


def _object(
    path: Path, number: int, value: Any, what: str, errors: list[ErrorDetail] | None
) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    detail = ErrorDetail("$", "record-object", f"each {what} row must be a JSON object", value)
    detail = detail.in_file(f"{path}:{number}")
    if errors is None:
        raise ValidationError([detail])
    errors.append(detail)
    return None


def _jsonl_rows(
    path: Path, handle: IO[bytes], what: str, errors: list[ErrorDetail] | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    offset = 0
    lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b"")
    for number, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_BYTES:
            raise ValidationError([long_line(path, number)])
        start = offset
        offset += len(raw)
        if number == 1 and raw.startswith(_BOM):
            raw, start = raw[len(_BOM) :], start + len(_BOM)
        line = _decode(path, raw, start)
        if not line.strip():
            continue
        value = jsonl_line(path, number, line, errors)
        if value is BAD:
            continue
        row = _object(path, number, value, what, errors)
        if row is not None:
            yield number, row


def _json_rows(
    path: Path, data: bytes, what: str, errors: list[ErrorDetail] | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    start = len(_BOM) if data.startswith(_BOM) else 0
    text = _decode(path, data[start:], start)
    try:
        value = parse_json(text)
    except ValueError as exc:
        raise ValidationError([json_error(exc).in_file(path)]) from None
    if not isinstance(value, list):
        raise _error(path, "$", "rows-array", f"expected a JSON array of {what} rows", value)
    for index, item in enumerate(value):
        row = _object(path, index + 1, item, what, errors)
        if row is not None:
            yield index + 1, row


def _parquet_rows(path: Path, handle: IO[bytes], what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow  # type: ignore[import-untyped]  # pyarrow ships no type stubs
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    try:
        reader = pq.ParquetFile(handle)
    except (pyarrow.ArrowException, OSError) as exc:
        raise _error(
            path, "$", "parquet", f"not a readable Parquet file of {what}: {exc}"
        ) from None
    number = 0
    try:
        for batch in reader.iter_batches():
            for row in batch.to_pylist():
                number += 1
                yield number, row
    except (pyarrow.ArrowException, OSError) as exc:
        where = f"after row {number}"
        raise _error(path, where, "parquet", f"the Parquet file is damaged: {exc}") from None


def _plain(value: Any) -> Any:
    """NaN becomes null (JSON has no NaN; a NaN score means "no value"), recursively."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as JSON objects: numpy numbers as Python ones, NaN as null."""
    import numpy as np

    return [
        _plain({k: v.item() if isinstance(v, np.generic) else v for k, v in row.items()})
        for row in frame.to_dict(orient="records")
    ]


def _without_empty_objects(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop fields that are ``{}`` in every row that has them: Parquet has no empty struct
    (readers then see the field absent, and row models give their default ``{}``)."""
    fields = {k for r in records for k, v in r.items() if v == {}}
    empty = {k for k in fields if all(r.get(k, {}) in ({}, None) for r in records)}
    if not empty:
        return records
    return [{k: v for k, v in r.items() if k not in empty} for r in records]


def write_rows(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write ``rows`` to ``path`` in the format its extension names; return how many.

    Atomic: a temporary file beside ``path`` is written, fsynced and renamed over it, so
    a crash leaves the old file or the new one, never half of one. The extension is
    checked before anything is written. Float NaN is written as null. In Parquet, a field
    that is an empty object (or null) in every row is left out: Parquet cannot store an
    empty struct.
    """
    path = Path(path)
    fmt = table_format(path)
    count = 0
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        records = _without_empty_objects([_plain(dict(r)) for r in rows])
        try:
            table = pa.Table.from_pylist(records)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise InputError(f"{path}: these rows cannot be stored as Parquet ({exc})") from None
        with atomic_writer(path, "wb") as handle:
            pq.write_table(table, handle)
        return len(records)
    with atomic_writer(path) as handle:
        if fmt == "json":
            handle.write("[")
        for row in rows:
            text = json.dumps(_plain(dict(row)), ensure_ascii=False, allow_nan=False)
            if fmt == "json":
                handle.write(("," if count else "") + "\n  " + text)
            else:
                handle.write(text + "\n")
            count += 1
        if fmt == "json":
            handle.write("\n]\n" if count else "]\n")
    return count
