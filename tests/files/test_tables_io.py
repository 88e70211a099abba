"""read_rows / write_rows: formats by extension, checked by content; torn and hostile files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gamut_eval._tables import read_rows, table_format, write_rows
from gamut_eval.errors import InputError, ValidationError

ROWS = [
    {"question_id": "q1", "model": "m", "verdict": "meets", "n": 1},
    {"question_id": "q2", "model": "m", "verdict": None, "n": 2},
]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet", ".JSONL"])
def test_round_trip_in_every_format(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"rows{suffix}"
    assert write_rows(path, ROWS) == 2
    assert list(read_rows(path)) == [(1, ROWS[0]), (2, ROWS[1])]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_each_format_is_what_it_says(tmp_path: Path) -> None:
    write_rows(tmp_path / "a.jsonl", ROWS)
    write_rows(tmp_path / "a.json", ROWS)
    write_rows(tmp_path / "a.parquet", ROWS)
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == ROWS
    assert json.loads((tmp_path / "a.json").read_text()) == ROWS
    data = (tmp_path / "a.parquet").read_bytes()
    assert data[:4] == data[-4:] == b"PAR1"


def test_nan_is_written_as_null(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_rows(path, [{"gamut": float("nan"), "tiers": {"context": float("nan")}}])
    assert json.loads(path.read_text()) == {"gamut": None, "tiers": {"context": None}}


@pytest.mark.parametrize("name", ["rows.csv", "rows.txt", "rows", "rows.jsonl.gz"])
def test_an_unknown_extension_is_an_error_not_jsonl(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(ROWS[0]) + "\n")
    with pytest.raises(InputError, match=r"unknown table format.*\.jsonl, \.json, \.parquet"):
        list(read_rows(path))
    with pytest.raises(InputError, match="unknown table format"):
        write_rows(tmp_path / ("out-" + name), ROWS)
    assert not (tmp_path / ("out-" + name)).exists()


def test_a_parquet_name_on_jsonl_content_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    path.write_text(json.dumps(ROWS[0]) + "\n")
    with pytest.raises(ValidationError) as info:
        list(read_rows(path))
    assert info.value.details[0].rule == "parquet-magic"
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_parquet_content_under_a_json_name_is_an_error(tmp_path: Path, suffix: str) -> None:
    write_rows(tmp_path / "rows.parquet", ROWS)
    path = tmp_path / f"rows{suffix}"
    os.replace(tmp_path / "rows.parquet", path)
    with pytest.raises(ValidationError, match=r"is a Parquet file; rename it \.parquet") as info:
        list(read_rows(path))
    assert info.value.details[0].file == str(path)


def test_a_damaged_parquet_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 40 + b"PAR1")
    with pytest.raises(ValidationError, match="not a readable Parquet file") as info:
        list(read_rows(path, what="verdicts"))
    assert info.value.details[0].file == str(path)


def test_a_line_cut_mid_write_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps(ROWS[1])[:12])
    with pytest.raises(ValidationError) as info:
        list(read_rows(path))
    (detail,) = info.value.details
    assert (detail.file, detail.path, detail.rule) == (str(path), "line 2", "torn-line")
    # A complete last line without its newline is fine.
    path.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps(ROWS[1]))
    assert [n for n, _ in read_rows(path)] == [1, 2]


def test_a_byte_order_mark_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    text = "\r\n".join(json.dumps(r) for r in ROWS) + "\r\n\r\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert list(read_rows(path)) == [(1, ROWS[0]), (2, ROWS[1])]
    array = tmp_path / "rows.json"
    array.write_bytes(b"\xef\xbb\xbf" + json.dumps(ROWS, indent=1).replace("\n", "\r\n").encode())
    assert [r for _, r in read_rows(array)] == ROWS


def test_bytes_that_are_not_utf8_name_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    first = (json.dumps(ROWS[0]) + "\n").encode()
    # Line 2 is '{"model": "caf\xe9"}' in Latin-1: the bad byte is at offset 14 of line 2.
    path.write_bytes(first + b'{"model": "caf\xe9"}\n')
    with pytest.raises(ValidationError) as info:
        list(read_rows(path))
    (detail,) = info.value.details
    assert detail.file == str(path)
    assert detail.path == f"byte {len(first) + 14}"
    assert detail.rule == "utf-8"


def test_rows_must_be_objects_and_bad_lines_can_be_collected(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n{"a": \n{"a": 2}\n')
    errors: list = []
    rows = list(read_rows(path, what="verdicts", errors=errors))
    assert rows == [(1, {"a": 1}), (4, {"a": 2})]
    assert [(e.file, e.path, e.rule) for e in errors] == [
        (f"{path}:2", "$", "record-object"),
        (str(path), "line 3", "json-syntax"),
    ]
    assert "each verdicts row must be a JSON object" in errors[0].message
    with pytest.raises(ValidationError, match="record-object"):
        list(read_rows(path))


def test_a_json_table_must_be_an_array_of_objects(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"question_id": "q1"}))
    with pytest.raises(ValidationError, match="rows-array"):
        list(read_rows(path))
    path.write_text('[{"a": 1, "a": 2}]')
    with pytest.raises(ValidationError, match="duplicate key"):
        list(read_rows(path))


def test_a_missing_file_and_a_directory_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        list(read_rows(tmp_path / "none.jsonl"))
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        list(read_rows(tmp_path / "dir.jsonl"))


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    write_rows(path, ROWS)

    def rows() -> object:
        yield ROWS[0]
        raise RuntimeError("crash while producing rows")

    with pytest.raises(RuntimeError):
        write_rows(path, rows())  # type: ignore[arg-type]
    assert [r for _, r in read_rows(path)] == ROWS
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_table_format_names_the_choice() -> None:
    assert [table_format(n) for n in ("a.jsonl", "a.JSON", "b.parquet")] == [
        "jsonl",
        "json",
        "parquet",
    ]
