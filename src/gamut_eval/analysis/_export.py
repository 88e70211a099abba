"""Writing a report: one HTML, Markdown or JSON file, or a folder of CSV or Parquet tables.

The Markdown form has the same tables as the HTML page, without the plots. Its cells are
escaped for Markdown tables: model ids and questions are untrusted text, and a ``|`` would
break a row, a newline would end it, and ``<``/``>`` would reach renderers that pass HTML
through, so those become escapes or entities.

The CSV and Parquet folders hold one file per table (``leaderboard.csv``, ...), written
even when empty so the set of files is always the same, and ``meta.json``. Parquet columns
get types from the row models (so an empty table still has a typed schema); lists stay
lists in Parquet and are joined with ``; `` in CSV. Every file is written atomically.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from gamut_eval._files import atomic_writer
from gamut_eval.analysis._html import render_html
from gamut_eval.analysis._report import TABLES, Report
from gamut_eval.analysis._tables import Row, TableSpec, cell_text, display_columns
from gamut_eval.errors import InputError

_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\n": " ",
        "\r": " ",
    }
)


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell (and inert as HTML)."""
    return text.translate(_ESCAPES)


def markdown_table(spec: TableSpec, rows: Sequence[Row]) -> str:
    """A GitHub-flavoured Markdown table; intervals follow their values in brackets."""
    columns = display_columns(spec.row)
    header = "| " + " | ".join(md_escape(c.header) for c in columns) + " |"
    rule = "|" + "|".join("---:" if c.unit else "---" for c in columns) + "|"
    lines = [header, rule]
    for row in rows:
        cells = []
        for column in columns:
            value, interval = cell_text(row, column)
            cells.append(md_escape(f"{value} {interval}" if interval else value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(report: Report) -> str:
    """Every table of the report, in report order, with a header saying how it was made."""
    meta = report.meta
    pct = f"{100 * meta.confidence:g}%"
    out = [
        f"# Gamut report{': ' + md_escape(meta.run_dir) if meta.run_dir else ''}",
        "",
        f"{meta.questions} questions, {len(meta.models)} models, judges: "
        f"{md_escape(', '.join(meta.judges))}; settings: {md_escape(', '.join(meta.settings))}. "
        f"Scores x100, rates in %; [low, high] are {pct} bootstrap intervals over questions "
        f"({meta.resamples} resamples, seed {meta.seed}).",
    ]
    if meta.notes:
        out += ["", *(f"- {md_escape(note)}" for note in meta.notes)]
    for spec in TABLES:
        rows = report.table(spec.name)
        if not rows:
            continue
        out += ["", f"## {spec.title}", "", md_escape(spec.description), ""]
        out.append(markdown_table(spec, rows))
    return "\n".join(out) + "\n"


FORMATS: tuple[str, ...] = ("html", "md", "csv", "parquet", "json")
FOLDER_FORMATS: tuple[str, ...] = ("csv", "parquet")
"""Formats written as a folder of one file per table."""

_SCALARS: dict[Any, pa.DataType] = {
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    str: pa.string(),
}


def _arrow_type(annotation: Any) -> pa.DataType:
    """Arrow type of a row field: scalars, ``X | None`` and ``list[str]``."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _arrow_type(next(a for a in args if a is not type(None)))
    if origin is list:
        return pa.list_(_arrow_type(args[0]))
    raise TypeError(f"no Arrow type for {annotation!r}")  # a new row field type: add it


def arrow_schema(row: type[Row]) -> pa.Schema:
    return pa.schema(
        [(name, _arrow_type(field.annotation)) for name, field in row.model_fields.items()]
    )


def render_text(report: Report, fmt: str) -> str:
    """The single-file formats: ``html``, ``md``, ``json``."""
    if fmt == "html":
        return render_html(report)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    raise ValueError(f"not a single-file format: {fmt!r}")


def _csv(spec: TableSpec, rows: list[Row]) -> str:
    frame = pd.DataFrame.from_records(
        [r.model_dump(mode="json") for r in rows], columns=list(spec.row.model_fields)
    )
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, list)).any():
            frame[column] = frame[column].map("; ".join)
    text: str = frame.to_csv(index=False)
    return text


def render_table(report: Report, fmt: str, table_name: str) -> str:
    """One table of ``report`` as ``md``, ``csv`` or ``json`` text (for standard output)."""
    spec = next((s for s in TABLES if s.name == table_name), None)
    if spec is None:
        raise InputError(
            f"table_name {table_name!r}: not a table of the report; choose one of "
            + ", ".join(s.name for s in TABLES),
            setting="table_name",
        )
    rows = report.table(table_name)
    if fmt == "csv":
        return _csv(spec, rows)
    if fmt == "md":
        return f"## {spec.title}\n\n{markdown_table(spec, rows)}\n"
    if fmt == "json":
        return json.dumps([r.model_dump(mode="json") for r in rows], indent=2) + "\n"
    raise InputError(f"fmt {fmt!r}: one table prints as md, csv or json", setting="fmt")


def _write_text(path: Path, text: str) -> None:
    with atomic_writer(path) as handle:
        handle.write(text)


def _write_folder(report: Report, fmt: str, folder: Path) -> list[Path]:
    if folder.exists() and not folder.is_dir():
        raise InputError(
            f"{folder}: {fmt} output is one file per table, so -o must be a folder, "
            "and this is a file"
        )
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in TABLES:
        rows = report.table(spec.name)
        path = folder / f"{spec.name}.{fmt}"
        if fmt == "csv":
            _write_text(path, _csv(spec, rows))
        else:
            table = pa.Table.from_pylist(
                [r.model_dump(mode="json") for r in rows], schema=arrow_schema(spec.row)
            )
            with atomic_writer(path, "wb") as handle:
                pq.write_table(table, handle)
        written.append(path)
    meta = folder / "meta.json"
    _write_text(meta, json.dumps(report.meta.model_dump(mode="json"), indent=2) + "\n")
    return [*written, meta]


def write_report(report: Report, fmt: str, out: str | Path) -> list[Path]:
    """Write ``report`` in ``fmt`` to ``out`` (a file, or a folder for csv/parquet)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
    out = Path(out)
    if fmt in FOLDER_FORMATS:
        return _write_folder(report, fmt, out)
    if out.is_dir():
        raise InputError(f"{out}: is a folder; give a file name for the {fmt} report")
    _write_text(out, render_text(report, fmt))
    return [out]


def default_output(run_dir: Path, fmt: str) -> Path:
    """Where ``gamut report`` writes without -o: RUN_DIR/report.<ext> or RUN_DIR/report/."""
    return run_dir / "report" if fmt in FOLDER_FORMATS else run_dir / f"report.{fmt}"
