"""Generated hostile files fed to ``gamut validate``, ``gamut judge`` (offline judge) and
``gamut score``: every one ends with exit 0 or 2 (or, for ``gamut score``, the documented
exit 1 of too many unscored checks), a message of one line per problem (no
traceback, no line longer than a message line can be), and nothing written when the input
is refused (docs/reliability.md D19).

The files are a small valid benchmark (two sample questions, their answers and verdicts)
with one part broken at a time: a field replaced by any JSON value, nesting thousands
deep, YAML aliases that expand without end, NUL and control characters, bytes that are not
UTF-8, lines cut short, images outside the folder or not images at all.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings, strategies as st

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir

QUESTIONS = ("sample-bibimbap", "sample-espresso")


def fuzz(examples: int) -> Callable[[Any], Any]:
    """Hypothesis settings: no per-example deadline, a modest number of examples."""
    return settings(
        deadline=None,
        max_examples=examples,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


LONGEST_LINE = 600
"""A problem's line: file, place, message and an 80-character value fit in this."""

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _deep(depth: int, opening: str = "[", closing: str = "]") -> str:
    return opening * depth + closing * depth


LAUGHS = "".join(
    f"{name}: &{name} [{','.join([f'*{prev}'] * 9) if prev else ','.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)

HOSTILE_TEXT = st.sampled_from(
    [
        "\x00",
        "a\x00b",
        "\u202e\u200b",
        "\ud7ff\ufeff",
        "../../../etc/passwd",
        "/etc/passwd",
        "x" * 5000,
        "${HOME}",
        "{{ 7*7 }}",
        "\r\n",
    ]
)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small valid benchmark: dataset, answers and the offline judge's verdicts."""
    root = tmp_path_factory.mktemp("bench")
    sample = sample_dir()
    rows = [json.loads(line) for line in (sample / "dataset.jsonl").read_text().splitlines()]
    rows = [row for row in rows if row["id"] in QUESTIONS]
    (root / "images").mkdir()
    for row in rows:
        shutil.copy(sample / row["image"], root / row["image"])
    _write_rows(root / "dataset.jsonl", rows)
    answers = [json.loads(line) for line in (sample / "responses.jsonl").read_text().splitlines()]
    _write_rows(root / "answers.jsonl", [a for a in answers if a["question_id"] in QUESTIONS])
    rubric = rows[0]["meta_rubric"]
    (root / "rubric.json").write_text(json.dumps(rubric, indent=1))
    result = _gamut("judge", *_judge_args(root, root / "answers.jsonl", root / "verdicts.jsonl"))
    assert result.exit_code == 0, result.output
    for name in ("dataset.jsonl", "answers.jsonl", "verdicts.jsonl", "rubric.json"):
        assert _gamut("validate", str(root / name)).exit_code in (0, 2)
    return root


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _gamut(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _judge_args(root: Path, answers: Path, out: Path) -> list[str]:
    return [
        "--dataset",
        str(root / "dataset.jsonl"),
        "--responses",
        str(answers),
        "--judge",
        "gamut/offline",
        "--out",
        str(out),
    ]


def _assert_clean(result: Result) -> None:
    """Exit 0 or 2, no exception escaped, a message of short lines and no traceback."""
    assert result.exit_code in (0, 2), (result.exit_code, result.output[-2000:])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = result.output.splitlines()
        assert lines, "a refusal says why"
        assert max(len(line) for line in lines) <= LONGEST_LINE, lines


# -- what breaks a file ---------------------------------------------------------------------

Mutation = Callable[[str], bytes]


def _at_field(draw: st.DrawFn, row: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A copy of ``row`` with one field, top level or one down, replaced by a hostile value."""
    row = json.loads(json.dumps(row))
    key = draw(st.sampled_from(sorted(row)))
    kind = draw(st.sampled_from(["json", "text", "deep", "drop"]))
    if kind == "drop":
        del row[key]
        return row, "{}"
    if kind == "deep":
        row[key] = "DEEP"
        return row, _deep(draw(st.integers(min_value=50, max_value=5000)))
    row[key] = draw(JSON) if kind == "json" else draw(HOSTILE_TEXT)
    return row, "{}"


@st.composite
def hostile_rows(draw: st.DrawFn, rows: list[dict[str, Any]]) -> bytes:
    """A JSONL file of ``rows`` with one row broken, or the whole file broken."""
    how = draw(st.sampled_from(["field", "torn", "bytes", "bom-crlf", "line", "empty"]))
    lines = [json.dumps(row) for row in rows]
    index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    if how == "field":
        row, deep = _at_field(draw, rows[index])
        lines[index] = json.dumps(row).replace('"DEEP"', deep)
    elif how == "torn":
        cut = draw(st.integers(min_value=1, max_value=len(lines[-1]) - 1))
        return ("\n".join(lines)[:-cut]).encode()
    elif how == "bytes":
        raw = ("\n".join(lines) + "\n").encode()
        at = draw(st.integers(min_value=0, max_value=len(raw) - 1))
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", b"PAR1"]))
        return raw[:at] + junk + raw[at:]
    elif how == "bom-crlf":
        return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode()
    elif how == "line":
        lines[index] = draw(st.sampled_from(["[]", "null", "1", '"x"', _deep(3000), "{" * 3000]))
    else:
        return b""
    return ("\n".join(lines) + "\n").encode()


@st.composite
def hostile_rubric(draw: st.DrawFn, rubric: dict[str, Any]) -> tuple[str, bytes]:
    """A meta-rubric file (YAML or JSON) with one part broken."""
    how = draw(st.sampled_from(["field", "laughs", "aliases", "deep-yaml", "bytes", "json"]))
    if how == "field":
        broken, deep = _at_field(draw, rubric)
        return ".json", json.dumps(broken).replace('"DEEP"', deep).encode()
    if how == "laughs":
        levels = draw(st.integers(min_value=1, max_value=9))
        head = "".join(LAUGHS.splitlines(keepends=True)[:levels])
        field = draw(st.sampled_from(["id", "question", "items", "entity"]))
        return ".yaml", (head + f"{field}: *{'abcdefghi'[levels - 1]}\n").encode()
    if how == "aliases":
        count = draw(st.integers(min_value=1, max_value=1500))
        return ".yaml", ("x: &x 1\nid: [" + ", ".join(["*x"] * count) + "]\n").encode()
    if how == "deep-yaml":
        depth = draw(st.integers(min_value=10, max_value=3000))
        return ".yaml", f"id: q\nitems: {_deep(depth)}\n".encode()
    if how == "bytes":
        raw = json.dumps(rubric).encode()
        at = draw(st.integers(min_value=0, max_value=len(raw) - 1))
        return ".json", raw[:at] + draw(st.sampled_from([b"\xff", b"\x00", b"\t\x0b"])) + raw[at:]
    return ".json", json.dumps(draw(JSON)).encode()


def _fresh() -> Path:
    return Path(tempfile.mkdtemp(prefix="gamut-fuzz-"))


# -- the tests ------------------------------------------------------------------------------


@fuzz(80)
@given(data=st.data())
def test_validate_on_hostile_rubrics_and_datasets(bench: Path, data: st.DataObject) -> None:
    folder = _fresh()
    try:
        if data.draw(st.booleans()):
            rubric = json.loads((bench / "rubric.json").read_text())
            suffix, raw = data.draw(hostile_rubric(rubric))
            path = folder / f"rubric{suffix}"
        else:
            rows = [json.loads(line) for line in (bench / "dataset.jsonl").read_text().splitlines()]
            raw = data.draw(hostile_rows(rows))
            shutil.copytree(bench / "images", folder / "images")
            path = folder / "dataset.jsonl"
        path.write_bytes(raw)
        before = sorted(p.name for p in folder.iterdir())
        result = _gamut("validate", str(path))
        _assert_clean(result)
        assert sorted(p.name for p in folder.iterdir()) == before  # validate writes nothing
    finally:
        shutil.rmtree(folder)


@fuzz(30)
@given(data=st.data())
def test_judge_on_hostile_answers_and_datasets(bench: Path, data: st.DataObject) -> None:
    folder = _fresh()
    try:
        shutil.copytree(bench / "images", folder / "images")
        shutil.copy(bench / "dataset.jsonl", folder / "dataset.jsonl")
        answers = folder / "answers.jsonl"
        shutil.copy(bench / "answers.jsonl", answers)
        broken = data.draw(st.sampled_from(["answers", "dataset"]))
        target = folder / ("answers.jsonl" if broken == "answers" else "dataset.jsonl")
        rows = [json.loads(line) for line in target.read_text().splitlines()]
        target.write_bytes(data.draw(hostile_rows(rows)))
        out = folder / "out" / "verdicts.jsonl"
        result = _gamut("judge", *_judge_args(folder, answers, out))
        _assert_clean(result)
        if result.exit_code == 2:
            assert not (folder / "out").exists()  # refused before anything was written
        else:
            assert out.is_file()
    finally:
        shutil.rmtree(folder)


@fuzz(40)
@given(data=st.data())
def test_score_on_hostile_verdicts(bench: Path, data: st.DataObject) -> None:
    folder = _fresh()
    try:
        rows = [json.loads(line) for line in (bench / "verdicts.jsonl").read_text().splitlines()]
        verdicts = folder / "verdicts.jsonl"
        verdicts.write_bytes(data.draw(hostile_rows(rows)))
        out = folder / "scores.jsonl"
        args = ["--dataset", str(bench / "dataset.jsonl"), "--verdicts", str(verdicts)]
        result = _gamut("score", *args, "--out", str(out))
        if result.exit_code == 1:
            # Rows that lost their verdict are unscored, not bad input: past the limit the
            # run fails as `gamut judge` does (exit 1, docs/usage.md), writing nothing.
            assert "above max_unscored_rate" in " ".join(result.output.split()), result.output
            assert "Traceback" not in result.output
        else:
            _assert_clean(result)
        assert out.exists() == (result.exit_code == 0)
    finally:
        shutil.rmtree(folder)
