"""``gamut score --dataset D --verdicts V``: complete, known, unambiguous verdicts or exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval._tables import read_rows, write_rows
from gamut_eval.cli._main import cli

# Checks of each question: identity (AC), toppings/min-2 (V), toppings/option-1..3 (C).
CHECKS = [
    "identity",
    "toppings/min-2",
    "toppings/option-1",
    "toppings/option-2",
    "toppings/option-3",
]


def _record(qid: str) -> dict[str, object]:
    return {
        "id": qid,
        "question": "What dish is this?",
        "meta_rubric": {
            "id": qid,
            "question": "What dish is this?",
            "items": [
                {"id": "identity", "type": "fact", "tier": "answer_critical",
                 "statement": "Identifies bibimbap."},
                {"id": "toppings", "type": "flexible_list", "tier": "valuable",
                 "name": "toppings", "options": ["beef", "egg", "tofu"], "min_required": 2},
            ],
        },
    }  # fmt: skip


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "dataset.jsonl"
    write_rows(path, [_record("q-1"), _record("q-2")])
    return path


def _rows(qid: str, model: str, verdicts: list[str | None]) -> list[dict[str, object]]:
    return [
        {"question_id": qid, "model": model, "setting": "multimodal", "judge": "j",
         "check_id": check, "verdict": verdict}
        for check, verdict in zip(CHECKS, verdicts, strict=True)
    ]  # fmt: skip


GOOD = (
    _rows("q-1", "a", ["meets"] * 5)
    + _rows("q-2", "a", [None, "meets", "meets", "meets", "meets"])
    + _rows("q-1", "b", ["meets", "missing", "meets", "missing", "missing"])
    + _rows("q-2", "b", ["missing"] * 5)
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _score(dataset: Path, verdicts: Path, *extra: str) -> tuple[int, str, str]:
    """``gamut score``, with no unscored limit unless one is given: these hand-made rows
    leave checks unscored on purpose (a: 1 of its 10 checks), and the limit has a test."""
    limit = [] if "--max-unscored-rate" in extra else ["--max-unscored-rate", "1"]
    argv = ["score", "--dataset", str(dataset), "--verdicts", str(verdicts), *limit, *extra]
    return run(*argv)


def test_no_score_past_the_unscored_limit_of_a_model_in_a_setting(
    dataset: Path, tmp_path: Path
) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    write_rows(verdicts, GOOD)
    out = tmp_path / "scores.jsonl"
    code, stdout, stderr = _score(
        dataset, verdicts, "--max-unscored-rate", "0.02", "--out", str(out)
    )
    assert code == 1
    message = " ".join(stderr.split())
    assert "a / multimodal: 1 of 10 checks (10.0%) could not be graded by j" in message
    assert "b / multimodal" not in message
    assert "(option --max-unscored-rate)" in message
    assert (stdout, out.exists()) == ("", False)
    assert _score(dataset, verdicts, "--max-unscored-rate", "0.1")[0] == 0  # 10% is not above


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_a_run_is_scored_with_unscored_responses_and_unpaired_rows_shown(
    dataset: Path, tmp_path: Path, suffix: str
) -> None:
    verdicts = tmp_path / f"verdicts{suffix}"
    write_rows(verdicts, GOOD)
    out = tmp_path / "scores.parquet"
    code, stdout, stderr = _score(dataset, verdicts, "--json", "--out", str(out))
    assert code == 0, stderr
    summary = {row["model"]: row for row in json.loads(stdout)}
    # a: q-1 all met -> 1.0; q-2's only AC check unscored -> no score (not 1.0).
    assert summary["a"]["gamut"] == 1.0
    assert (summary["a"]["scored"], summary["a"]["unscored"]) == (1, 1)
    assert summary["a"]["missing_questions"] == 1  # b is scored on q-2, a is not
    # b: q-1 AC 1, V 0, C 1/3 -> 0.6 * 1 + 0.3 * 0 + 0.1 * (1/3) = 0.6333...; q-2 all
    # missing -> 0. Mean (0.6333... + 0) / 2 = 0.31666...
    assert summary["b"]["gamut"] == pytest.approx((0.6 + 0.1 / 3) / 2)
    assert (summary["b"]["scored"], summary["b"]["unscored"]) == (2, 0)
    assert summary["b"]["missing_questions"] == 0
    scores = {(r["question_id"], r["model"]): r for _, r in read_rows(out)}
    assert scores[("q-2", "a")]["gamut"] is None
    assert scores[("q-1", "b")]["gamut"] == pytest.approx(0.6 + 0.1 / 3)


def test_the_terminal_table_shows_averaged_unscored_and_the_unpaired_flag(
    dataset: Path, tmp_path: Path
) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    write_rows(verdicts, GOOD)
    code, stdout, _ = _score(dataset, verdicts)
    assert code == 0
    text = " ".join(stdout.split())
    assert "n: responses averaged; unscored: responses without a Gamut score" in text
    # a: n 1, unscored 1, gamut 100.0 and paired *-1 (it lacks q-2); b: 2, 0, 31.7, yes.
    assert "│ a │ 1 │ 1 │ 100.0 │" in text
    assert "│ *-1 │" in text
    assert "│ b │ 2 │ 0 │ 31.7 │" in text
    assert "│ yes │" in text
    assert "the means are not over the same questions" in text


def test_verdicts_for_only_some_checks_are_an_error_naming_them(
    dataset: Path, tmp_path: Path
) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    # Only the AC check of each response: before, this scored 100 and exited 0.
    write_rows(verdicts, [r for r in GOOD if r["check_id"] == "identity"])
    out = tmp_path / "scores.jsonl"
    code, stdout, stderr = _score(dataset, verdicts, "--out", str(out))
    assert code == 2
    assert stdout == ""
    text = " ".join(stderr.split())
    # 4 responses x 4 absent checks each.
    assert "16 check(s) have no verdict row, in 4 response(s)" in text
    assert (
        "no verdict row (question_id 'q-1', model 'a', setting 'multimodal', judge 'j') "
        '[verdict-present] (found: "toppings/min-2")'
    ) in text
    assert text.count("no verdict row (") == 5
    assert str(verdicts) in text
    assert not out.exists()


def test_unknown_questions_and_checks_are_errors_naming_them(dataset: Path, tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    stray = _rows("q-9", "a", ["meets"] * 5)
    odd = {**GOOD[0], "check_id": "toppings/option-9"}
    write_rows(verdicts, [*GOOD, *stray, odd])
    code, _, stderr = _score(dataset, verdicts)
    assert code == 2
    text = " ".join(stderr.split())
    assert "1 question id(s) of the verdict rows have no checklist" in text
    assert '["q-9"]' in text
    assert "no such check in question 'q-1' [known-check] (found: \"toppings/option-9\")" in text


def test_two_differing_rows_for_one_check_are_an_error_identical_ones_are_not(
    dataset: Path, tmp_path: Path
) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    write_rows(verdicts, [*GOOD, GOOD[0], GOOD[1]])
    assert _score(dataset, verdicts, "--json")[0] == 0
    write_rows(verdicts, [*GOOD, {**GOOD[0], "verdict": "contradicts"}])
    code, _, stderr = _score(dataset, verdicts)
    assert code == 2
    text = " ".join(stderr.split())
    assert "1 verdict row(s) repeat an earlier row's identity with different content" in text
    assert f"{verdicts}:row 21: differs from row 1" in text


def test_an_unknown_output_format_is_refused_before_any_work(dataset: Path, tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    write_rows(verdicts, GOOD)
    code, _, stderr = _score(dataset, verdicts, "--out", str(tmp_path / "scores.csv"))
    assert code == 2
    assert "unknown table format '.csv'" in stderr
    assert not (tmp_path / "scores.csv").exists()


def test_a_torn_verdicts_file_is_an_error(dataset: Path, tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    write_rows(verdicts, GOOD)
    verdicts.write_bytes(verdicts.read_bytes()[:-20])
    code, _, stderr = _score(dataset, verdicts)
    assert code == 2
    assert f"{verdicts}:line 20: the last line is incomplete" in " ".join(stderr.split())


def test_the_score_command_module_does_not_import_pandas() -> None:
    # The cli package registers every command; load this one module on its own.
    code = (
        "import sys, types, gamut_eval, pathlib\n"
        "pkg = types.ModuleType('gamut_eval.cli')\n"
        "pkg.__path__ = [str(pathlib.Path(gamut_eval.__file__).parent / 'cli')]\n"
        "sys.modules['gamut_eval.cli'] = pkg\n"
        "import gamut_eval.cli._report\n"
        "heavy = [m for m in ('pandas', 'numpy', 'pyarrow') if m in sys.modules]\n"
        "sys.exit(f'imported {heavy}' if heavy else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_score_command_s_unscored_limit_defaults_to_the_judge_s() -> None:
    from gamut_eval.cli._report import MAX_UNSCORED_RATE
    from gamut_eval.judge import JudgeSettings

    assert JudgeSettings.model_fields["max_unscored_rate"].default == MAX_UNSCORED_RATE
