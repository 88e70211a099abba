"""``grade_check`` reads the compiler's structured check data: every compiled check of the
sample carries it, a check without it is graded on its text, and the structure wins over
what the text would suggest."""

from __future__ import annotations

import json

import pytest

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge._builtin import grade_check
from gamut_eval.rubric import Check


def _sample() -> tuple[dict[str, list[Check]], list[dict[str, str]]]:
    dataset = load_dataset(sample_dir() / "dataset.jsonl")
    checks = {qid: list(cl.checks) for qid, cl in dataset.checklists().items()}
    rows = [
        json.loads(line) for line in (sample_dir() / "responses.jsonl").read_text().splitlines()
    ]
    return checks, rows


def test_every_compiled_sample_check_carries_its_structure() -> None:
    checks, _ = _sample()
    for group in checks.values():
        for check in group:
            assert check.target is not None, check.id
            if str(check.kind) in ("list_threshold", "coverage_threshold"):
                assert check.options, check.id
                assert check.at_least is not None, check.id
            if str(check.kind) in ("sequence", "sequence_full"):
                assert len(check.options) >= 2, check.id


def test_every_sample_check_kind_is_covered() -> None:
    checks, _ = _sample()
    kinds = {str(c.kind) for group in checks.values() for c in group}
    assert {"fact", "list_item", "list_threshold", "step", "sequence"} <= kinds


def test_a_check_without_structure_is_graded_on_its_text() -> None:
    check = Check(
        id="uses/min-2",
        kind="list_threshold",
        tier="valuable",
        text="Says the moka pot brews coffee on a stove.",
        item="uses",
    )
    assert (check.target, check.options, check.at_least) == (None, (), None)
    assert grade_check("The moka pot brews coffee on a stove.", check)[0] == "meets"
    assert grade_check("It is a kitchen tool.", check)[0] == "missing"


def test_structured_data_wins_over_the_text() -> None:
    """An option containing "; " stays one option (the text path would split it)."""
    check = Check(
        id="uses/min-2",
        kind="list_threshold",
        tier="valuable",
        text="Mentions at least 2 of the following uses: espresso; stovetop; brewing.",
        item="uses",
        target="uses",
        options=("espresso", "stovetop; brewing"),
        at_least=2,
    )
    verdict, why = grade_check("Makes espresso on a stovetop, brewing it fast.", check)
    assert (verdict, why) == ("meets", "names 2 listed options (needs 2)")


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_response(text: str) -> None:
    check = Check(id="a", kind="fact", tier="valuable", text="Names the maker.", item="a")
    assert grade_check(text, check) == ("missing", "empty response")
