"""complete_responses: every (question, model, setting) answered exactly once, or a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gamut_eval._tables import write_rows
from gamut_eval.errors import ValidationError
from gamut_eval.responses import (
    FILLED_KEY,
    ResponseKey,
    ResponseRow,
    check_responses,
    complete_responses,
    iter_responses,
)

QUESTIONS = ["q1", "q2", "q3"]


def _row(
    qid: str, model: str, setting: str = "multimodal", text: str = "An answer."
) -> ResponseRow:
    return ResponseRow(question_id=qid, model=model, setting=setting, response=text)  # type: ignore[arg-type]


def test_a_full_grid_passes_and_identical_repeats_are_kept_once() -> None:
    rows = [_row(q, m) for q in QUESTIONS for m in ("a", "b")]
    result = complete_responses([*rows, rows[0]], QUESTIONS, ["a", "b"], ["multimodal"])
    assert result.rows == tuple(rows)
    assert (result.filled, result.collapsed) == ((), 1)


def test_missing_cells_are_counted_and_the_first_few_named() -> None:
    # Grid 3 questions x 2 models x 2 settings = 12 cells; 5 answered, so 7 missing.
    rows = [_row("q1", "a"), _row("q1", "b"), _row("q2", "a"), _row("q3", "a"), _row("q3", "b")]
    with pytest.raises(ValidationError) as info:
        complete_responses(
            rows, QUESTIONS, ["a", "b"], ["multimodal", "text_only"], source="r.jsonl"
        )
    (detail,) = info.value.details
    assert detail.rule == "response-present"
    assert detail.file == "r.jsonl"
    text = str(info.value)
    assert "7 (question, model, setting) of the grid have no answer" in text
    # Grid order: question, then model, then setting; the first five, then "2 more".
    assert (
        "('q1', 'a', 'text_only'); ('q1', 'b', 'text_only'); ('q2', 'a', 'text_only'); "
        "('q2', 'b', 'multimodal'); ('q2', 'b', 'text_only') and 2 more"
    ) in text


def test_missing_cells_can_be_filled_as_empty_answers() -> None:
    rows = [_row("q1", "a"), _row("q3", "a")]
    result = complete_responses(rows, QUESTIONS, ["a"], ["multimodal"], fill_missing=True)
    assert result.filled == (ResponseKey("q2", "a", "multimodal"),)
    filled = result.rows[-1]
    assert (filled.question_id, filled.response, filled.metadata) == ("q2", "", {FILLED_KEY: True})
    assert len(result.rows) == 3


def test_unknown_questions_and_conflicting_rows_are_reported_together() -> None:
    rows = [
        _row("q1", "a"),
        _row("q2", "a"),
        _row("q3", "a"),
        _row("q9", "a"),
        _row("q8", "a"),
        _row("q1", "a", text="A different answer."),
    ]
    with pytest.raises(ValidationError) as info:
        complete_responses(rows, QUESTIONS, ["a"], ["multimodal"])
    rules = [d.rule for d in info.value.details]
    assert rules == ["known-question", "unique-response"]
    text = str(info.value)
    assert (
        "2 answer(s) are for questions not in the dataset: ('q9', 'a', 'multimodal'); ('q8'" in text
    )
    assert (
        "1 (question, model, setting) have two rows that differ: ('q1', 'a', 'multimodal')" in text
    )


def test_models_and_settings_default_to_those_the_rows_name() -> None:
    rows = [_row("q1", "a"), _row("q2", "b", "text_only")]
    # Grid: 3 questions x {a, b} x {multimodal, text_only} = 12 cells, 2 present.
    result = complete_responses(rows, QUESTIONS, fill_missing=True)
    assert len(result.filled) == 10
    assert len(result.rows) == 12


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_answers_are_read_from_every_table_format(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"responses{suffix}"
    rows = [_row("q1", "a"), _row("q2", "a")]
    write_rows(path, [r.model_dump() for r in rows])
    assert check_responses(path, set(QUESTIONS)) == {"q1": 1, "q2": 1}
    assert [r for _, r in iter_responses(path)] == rows


def test_answers_outside_the_grid_are_an_error() -> None:
    rows = [_row(q, "a") for q in QUESTIONS] + [_row("q1", "z")]
    with pytest.raises(ValidationError, match=r"1 answer\(s\) are for a model or setting not"):
        complete_responses(rows, QUESTIONS, ["a"], ["multimodal"])


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_an_empty_model_name_is_refused_naming_file_line_field_and_value(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "answers.jsonl"
    rows = [
        {"question_id": "q1", "model": "a", "setting": "multimodal", "response": "x"},
        {"question_id": "q2", "model": name, "setting": "multimodal", "response": "x"},
    ]
    write_rows(path, rows)
    with pytest.raises(ValidationError) as info:
        check_responses(path, set(QUESTIONS))
    assert len(info.value.details) == 1
    message = str(info.value)
    assert message.startswith(f"{path}:2:model: ")
    assert "a model needs a name" in message
    assert message.endswith(f"(found: {json.dumps(name)})")
    assert "\n" not in message


def test_gamut_judge_refuses_an_empty_model_name_with_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gamut_eval.cli import cli

    path = tmp_path / "answers.jsonl"
    write_rows(path, [{"question_id": "q", "model": " ", "setting": "text_only", "response": ""}])
    out = tmp_path / "verdicts.jsonl"
    argv = ["judge", "--responses", str(path), "--judge", "gamut/offline", "--out", str(out)]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    assert f"{path}:1:model: Value error, a model needs a name" in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not out.exists()
