"""Every reader has limits: YAML aliases and their expansion, nesting depth, document size
and line length. Each breach is one line naming the file, the place and the rule, exit 2,
and costs no more than reading a short file (docs/reliability.md D19)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gamut_eval import _files, _tables
from gamut_eval._files import MAX_DEPTH, MAX_YAML_ALIASES, parse_json, read_document
from gamut_eval._tables import read_rows
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.errors import ErrorDetail, ValidationError, show_value

LAUGHS = "".join(
    f"{name}: &{name} [{','.join([f'*{prev}'] * 9) if prev else ','.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
"""Nine levels of nine aliases: 9**9 (387 million) strings once expanded, in 350 bytes."""


def _validate(*paths: Path) -> Any:
    return CliRunner().invoke(cli, ["validate", *map(str, paths)])


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_billion_laughs_yaml_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    # The expanded value put in a field the validator prints: the printer once serialised
    # all of it, and `gamut validate` never returned.
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS + "id: *i\n")
    assert len(path.read_bytes()) < 400
    result = _validate(path)
    assert result.exit_code == 2
    [problem, summary] = result.output.splitlines()
    assert problem.startswith(f"{path}:line 1, column 1: its aliases expand to more than")
    assert problem.endswith("[yaml-aliases]")
    assert summary == "1 of 1 file(s) invalid"


def test_yaml_aliases_beyond_the_count_are_refused_at_the_first_one_too_many(
    tmp_path: Path,
) -> None:
    path = tmp_path / "aliases.yaml"
    uses = "\n".join("  - *v" for _ in range(MAX_YAML_ALIASES + 1))
    path.write_text(f"base: &v 1\nlist:\n{uses}\n")
    with pytest.raises(ValidationError) as caught:
        read_document(path)
    [detail] = caught.value.details
    # line 1 is the anchor, line 2 "list:", aliases from line 3: the one too many is on
    # line 3 + MAX_YAML_ALIASES.
    assert (detail.path, detail.rule) == (f"line {3 + MAX_YAML_ALIASES}, column 5", "yaml-aliases")
    # Exactly the allowed count reads, with the aliases expanded.
    path.write_text(f"base: &v 1\nlist:\n{uses.rsplit(chr(10), 1)[0]}\n")
    assert read_document(path)["list"] == [1] * MAX_YAML_ALIASES


def test_the_error_printer_renders_only_what_it_shows() -> None:
    # A thousand million items, shared (as an expanded alias is): rendering the whole
    # value would never finish; the message shows its first 80 characters.
    row = ["lol"] * 1000
    block = [row] * 1000
    huge = [block] * 1000
    shown = show_value(huge)
    # "[[[" and ten '"lol", ' make 71 characters; 6 more of the eleventh, then "...".
    assert shown == "[[[" + ", ".join(['"lol"'] * 10) + ', "lol...'
    assert len(shown) == 80
    assert show_value("x" * 10_000_000) == '"' + "x" * 76 + "..."
    assert show_value({"a": _nested(100_000)}).startswith('{"a": [[[[')
    assert show_value([1, {"b": None}]) == '[1, {"b": null}]'  # short values are whole JSON
    detail = ErrorDetail("id", "type", "must be a string", huge)
    assert len(detail.render()) < 200


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_rubric_nested_past_the_limit_names_the_line_and_column(
    tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text('{"id": "q",\n "items": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    result = _validate(path)
    assert result.exit_code == 2
    [problem, _] = result.output.splitlines()
    # The 65th bracket opens level 66 (the outer object is level 1) at column 76 of line 2:
    # level MAX_DEPTH + 1 is the bracket at column 11 + (MAX_DEPTH - 1).
    assert problem.startswith(f"{path}:line 2, column {11 + MAX_DEPTH - 1}: nested deeper than")
    assert problem.endswith("[nesting-depth]")
    assert "Traceback" not in result.output


def test_nesting_up_to_the_limit_reads_and_one_more_level_is_refused() -> None:
    assert parse_json(json.dumps(_nested(MAX_DEPTH))) == _nested(MAX_DEPTH)
    with pytest.raises(_files.LimitError) as caught:
        parse_json(json.dumps(_nested(MAX_DEPTH + 1)))
    assert (caught.value.rule, caught.value.where) == (
        "nesting-depth",
        f"line 1, column {MAX_DEPTH + 1}",
    )
    # Deep enough for Python's own parser to give up is the same error, not a crash.
    with pytest.raises(_files.LimitError):
        parse_json("[" * 200_000 + "]" * 200_000)


def test_answers_nested_past_the_limit_are_refused_by_judge_with_the_line(
    tmp_path: Path,
) -> None:
    rows = (sample_dir() / "responses.jsonl").read_text().splitlines(keepends=True)
    deep = json.loads(rows[1])
    deep["metadata"] = "DEEP"
    bad = json.dumps(deep).replace('"DEEP"', "[" * 100_000 + "]" * 100_000)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(rows[0] + bad + "\n" + "".join(rows[2:]))
    out = tmp_path / "v.jsonl"
    result = CliRunner().invoke(
        cli,
        [
            "judge",
            "--dataset",
            "sample",
            "--responses",
            str(answers),
            "--judge",
            "gamut/offline",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 2
    assert f"{answers}:line 2, column " in result.output
    assert "[nesting-depth]" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_a_jsonl_line_past_the_length_limit_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(_files, "MAX_LINE_BYTES", 100)
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n' + json.dumps({"a": "x" * 100}) + "\n")
    with pytest.raises(ValidationError) as caught:
        list(read_rows(path))
    [detail] = caught.value.details
    assert (detail.file, detail.path, detail.rule) == (str(path), "line 2", "line-length")
    with pytest.raises(ValidationError) as caught:
        list(_files.read_jsonl(path))
    assert caught.value.details[0].rule == "line-length"
    path.write_text('{"a": 1}\n' + json.dumps({"a": "x" * 80}) + "\n")  # 91 bytes: fine
    assert [row for _, row in read_rows(path)] == [{"a": 1}, {"a": "x" * 80}]


def test_a_document_past_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_DOCUMENT_BYTES", 1000)
    path = tmp_path / "rubric.yaml"
    path.write_text("id: q\n" + "# padding\n" * 200)
    result = _validate(path)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"{path}: 2,006 bytes, more than the 1,000 a document may have; is this the right file?",
        "1 of 1 file(s) invalid",
    ]
