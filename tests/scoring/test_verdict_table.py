"""The one reader of verdict tables: the columns asked for, one pass over a good file, the
strict row reader (naming line, field and value) only for a file that is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

import gamut_eval._verdict_table as verdict_table
from gamut_eval._verdict_table import read_verdict_table
from gamut_eval.errors import InputError


def _row(q: str, c: str, verdict: str | None = "meets", **more: Any) -> dict[str, Any]:
    return {"question_id": q, "model": "m/a", "setting": "multimodal", "judge": "j/x",
            "check_id": c, "verdict": verdict, "explanation": f"why {q} {c}",
            "status": "ok", "attempts": 1, **more}  # fmt: skip


def _write(path: Path, rows: list[Any], text: str | None = None) -> Path:
    path.write_text(
        text if text is not None else "".join(json.dumps(r) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


ROWS = [_row("q-1", "c-1"), _row("q-1", "c-2", None), _row("q-2", "c-1", "contradicts")]


@pytest.fixture
def no_row_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A good file never reaches the strict row reader (one pass, in Arrow)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the row reader was used for a good file")

    monkeypatch.setattr(verdict_table, "read_rows", refuse)


def test_a_good_jsonl_file_is_read_in_one_arrow_pass_with_only_the_scored_fields(
    tmp_path: Path, no_row_reader: None
) -> None:
    table = read_verdict_table(_write(tmp_path / "v.jsonl", ROWS))
    assert list(table.frame.columns) == [
        "question_id", "model", "setting", "judge", "check_id", "verdict",
    ]  # fmt: skip
    assert table.explanations is None
    assert table.frame["verdict"].tolist()[0] == "meets"
    assert table.frame["verdict"].isna().tolist() == [False, True, False]
    assert str(table.frame["check_id"].dtype) == "category"


def test_explanations_come_apart_row_for_row(tmp_path: Path, no_row_reader: None) -> None:
    table = read_verdict_table(_write(tmp_path / "v.jsonl", ROWS), explanations=True)
    assert "explanation" not in table.frame.columns
    assert table.explanations is not None
    assert table.explanations.to_pylist() == ["why q-1 c-1", "why q-1 c-2", "why q-2 c-1"]


def test_every_field_on_request(tmp_path: Path, no_row_reader: None) -> None:
    frame = read_verdict_table(_write(tmp_path / "v.jsonl", ROWS), fields=None).frame
    assert {"status", "attempts", "explanation"} <= set(frame.columns)
    assert frame["attempts"].tolist() == [1, 1, 1]


def test_the_same_rows_in_each_format_read_the_same(tmp_path: Path) -> None:
    jsonl = read_verdict_table(_write(tmp_path / "v.jsonl", ROWS), explanations=True)
    array = tmp_path / "v.json"
    array.write_text(json.dumps(ROWS), encoding="utf-8")
    as_json = read_verdict_table(array, explanations=True)
    parquet = tmp_path / "v.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet)
    as_parquet = read_verdict_table(parquet, explanations=True)
    for other in (as_json, as_parquet):
        assert other.frame.astype(object).equals(jsonl.frame.astype(object))
        assert other.explanations is not None
        assert other.explanations.to_pylist() == jsonl.explanations.to_pylist()  # type: ignore[union-attr]


def test_identical_repeats_are_kept_once_with_their_explanation(tmp_path: Path) -> None:
    rows = [*ROWS, ROWS[0]]
    table = read_verdict_table(_write(tmp_path / "v.jsonl", rows), explanations=True)
    assert len(table) == 3
    assert table.explanations is not None
    assert len(table.explanations) == 3


def test_a_repeat_with_another_verdict_is_refused_naming_both_rows(tmp_path: Path) -> None:
    rows = [*ROWS, _row("q-1", "c-1", "missing")]
    with pytest.raises(InputError) as caught:
        read_verdict_table(_write(tmp_path / "v.jsonl", rows))
    text = str(caught.value)
    assert "row 4: differs from row 1" in text
    assert str(tmp_path / "v.jsonl") in text


def test_a_row_without_its_check_id_is_named(tmp_path: Path) -> None:
    rows = [*ROWS, {"question_id": "q-3", "verdict": "meets"}]
    with pytest.raises(InputError) as caught:
        read_verdict_table(_write(tmp_path / "v.jsonl", rows))
    assert "row 4" in str(caught.value)
    assert "lacks check_id" in str(caught.value)


def test_a_number_where_text_belongs_is_named_with_its_value(tmp_path: Path) -> None:
    rows = [*ROWS, _row("q-3", "c-1", verdict=7)]  # type: ignore[arg-type]
    with pytest.raises(InputError) as caught:
        read_verdict_table(_write(tmp_path / "v.jsonl", rows))
    assert "row 4" in str(caught.value)
    assert "`verdict` must be a string" in str(caught.value)
    assert "7" in str(caught.value)


def test_an_absent_verdict_is_unscored_but_a_file_without_any_is_refused(
    tmp_path: Path,
) -> None:
    absent = {k: v for k, v in ROWS[0].items() if k != "verdict"}
    table = read_verdict_table(_write(tmp_path / "a.jsonl", [ROWS[2], absent]))
    assert table.frame["verdict"].isna().tolist() == [False, True]
    renamed = [{("label" if k == "verdict" else k): v for k, v in r.items()} for r in ROWS]
    with pytest.raises(InputError, match="no row has a verdict"):
        read_verdict_table(_write(tmp_path / "b.jsonl", renamed))


def test_a_torn_last_line_and_a_bad_middle_line_are_named(tmp_path: Path) -> None:
    good = "".join(json.dumps(r) + "\n" for r in ROWS)
    with pytest.raises(InputError, match="line 4: the last line is incomplete"):
        read_verdict_table(_write(tmp_path / "t.jsonl", [], good + '{"question_id": "q'))
    middle = good.replace("\n", "\n{oops\n", 1)
    with pytest.raises(InputError, match="line 2"):
        read_verdict_table(_write(tmp_path / "m.jsonl", [], middle))


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no rows"):
        read_verdict_table(_write(tmp_path / "e.jsonl", [], ""))


def test_a_byte_order_mark_and_crlf_are_read(tmp_path: Path) -> None:
    text = "\ufeff" + "".join(json.dumps(r) + "\r\n" for r in ROWS)
    table = read_verdict_table(_write(tmp_path / "bom.jsonl", [], text))
    assert table.frame["question_id"].tolist() == ["q-1", "q-1", "q-2"]


def test_a_parquet_file_of_categorical_columns_is_read_in_arrow(
    tmp_path: Path, no_row_reader: None
) -> None:
    import pandas as pd

    frame = pd.DataFrame(ROWS).astype({"check_id": "category", "verdict": "category"})
    frame.to_parquet(tmp_path / "v.parquet")
    table = read_verdict_table(tmp_path / "v.parquet")
    assert table.frame["check_id"].tolist() == ["c-1", "c-2", "c-1"]
    assert table.frame["verdict"].isna().tolist() == [False, True, False]
