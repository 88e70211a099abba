"""``gamut build diff OLD NEW`` and ``gamut build refine --input`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from construct_helpers import Responder, read_jsonl, write_jsonl
from test_construct_cli import run
from test_construct_refine import _draft

from gamut_eval.data import sample_dir

SAMPLE = sample_dir() / "dataset.jsonl"


def _sample_rows() -> list[dict[str, Any]]:
    rows = read_jsonl(SAMPLE)
    for row in rows:
        row.pop("image", None)  # the copies live elsewhere; diff never needs the image
    return rows


def _item(row: dict[str, Any], item_id: str) -> dict[str, Any]:
    return next(i for i in row["meta_rubric"]["items"] if i["id"] == item_id)


def _by_id(rows: list[dict[str, Any]], qid: str) -> dict[str, Any]:
    return next(r for r in rows if r["id"] == qid)


def test_a_pure_addition_exits_0_and_lists_the_additions(tmp_path: Path) -> None:
    rows = _sample_rows()
    drinks = _item(_by_id(rows, "sample-espresso"), "drinks")
    drinks["options"].append("affogato")
    new = write_jsonl(tmp_path / "new.jsonl", rows)

    code, out, err = run("build", "diff", "sample", str(new))

    assert code == 0, err
    option = len(drinks["options"])
    assert out.splitlines() == [f"sample-espresso drinks.options[{option}]: added affogato"]
    assert "0 removed, 0 changed, 0 moved, 0 reworded, 1 added: NEW is a superset of OLD" in err
    assert run("build", "diff", "sample", "sample")[0] == 0


def test_the_weakenings_a_superset_check_must_catch_exit_1_with_their_paths(
    tmp_path: Path,
) -> None:
    rows = _sample_rows()
    espresso = _by_id(rows, "sample-espresso")
    drinks = _item(espresso, "drinks")
    insight = drinks["meta_insights"][0]["statement"]
    drinks["meta_insights"] = []  # a nested meta-insight dropped
    drinks["min_required"] = [3]  # the list's threshold raised from 2
    _item(espresso, "identity")["tier"] = "context"  # the identity demoted
    new = write_jsonl(tmp_path / "new.jsonl", rows)

    code, out, err = run("build", "diff", "sample", str(new))

    assert code == 1
    assert out.splitlines() == [
        "sample-espresso identity.tier: changed answer_critical -> context",
        f"sample-espresso drinks.meta_insights[1]: removed {insight}",
        "sample-espresso drinks.min_required: changed [2] -> [3]",
    ]
    assert "1 removed, 2 changed" in err
    assert "NEW is not a superset of OLD (3 removal(s) or change(s))" in err


def test_rewording_is_listed_and_accepted_only_with_the_flag(tmp_path: Path) -> None:
    rows = _sample_rows()
    identity = _item(_by_id(rows, "sample-bibimbap"), "identity")
    before = identity["statement"]
    identity["statement"] = before.rstrip(".") + ", the Korean mixed-rice dish."
    new = write_jsonl(tmp_path / "new.jsonl", rows)
    line = f"sample-bibimbap identity.statement: reworded {before} -> {identity['statement']}"

    code, out, _ = run("build", "diff", "sample", str(new))
    assert (code, out.splitlines()) == (1, [line])
    code, out, err = run("build", "diff", "sample", str(new), "--allow-rewording")
    assert (code, out.splitlines()) == (0, [line + " (allowed)"])
    assert "NEW is a superset of OLD" in err


def test_a_single_rubric_file_against_a_dataset_and_a_missing_question(tmp_path: Path) -> None:
    rows = _sample_rows()
    one = tmp_path / "one.json"
    one.write_text(json.dumps(rows[0]["meta_rubric"]))
    code, out, _ = run("build", "diff", str(one), "sample")
    assert code == 0
    assert len(out.splitlines()) == len(rows) - 1  # the other questions are additions

    code, out, _ = run("build", "diff", "sample", str(one))
    assert code == 1
    assert f"{rows[1]['id']}: removed the rubric" in out


def test_bad_input_exits_2_naming_file_line_path_and_rule(tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "x", "question": "?"}])
    code, out, err = run("build", "diff", str(bad), "sample")
    assert (code, out) == (2, "")
    assert f"{bad}:1:$" in err
    assert "[row-kind]" in err

    rows = _sample_rows()
    _item(rows[0], "identity")["tier"] = "crucial"
    broken = write_jsonl(tmp_path / "broken.jsonl", rows)
    code, _, err = run("build", "diff", "sample", str(broken))
    assert code == 2
    assert f"{broken}:1:meta_rubric.items[0].tier" in err
    code, _, err = run("build", "diff", "sample", str(tmp_path / "none.jsonl"))
    assert code == 2
    assert "file not found" in err


def test_peoples_checklist_edits_in_old_are_shown(tmp_path: Path) -> None:
    from gamut_eval.rubric import MetaRubric, compile_rubric

    rows = _sample_rows()[:1]
    checklist = compile_rubric(MetaRubric.model_validate(rows[0]["meta_rubric"]))
    kept = tuple(c for c in checklist.checks if c.id != "egg")
    rows[0]["checklist"] = checklist.model_copy(update={"checks": kept}).model_dump(mode="json")
    old = write_jsonl(tmp_path / "revised.jsonl", rows)

    code, out, err = run("build", "diff", str(old), "sample")

    assert code == 0
    assert "sample-bibimbap egg: removed by people: [V] " in out
    assert "(re-applied on import)" in out
    assert "1 checklist edit(s) by people in OLD" in err


def test_refine_input_on_the_command_line(
    manifest: Path,
    workdir: Path,
    corpus: Path,
    tmp_path: Path,
    responder: Responder,
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    base = ("--model", "mockllm/model", "--corpus", str(corpus), "--max-snippets", "3")
    code, _, err = run("build", "refine", "--workdir", str(workdir), *base)
    assert code == 0, err
    rubrics = workdir / "refine" / "rubrics.jsonl"
    assert f"wrote {rubrics}" in err

    round2 = tmp_path / "round-2"
    code, _, err = run("build", "refine", "--workdir", str(round2), "--input", str(rubrics), *base)
    assert code == 0, err
    assert len(read_jsonl(round2 / "refine" / "rubrics.jsonl")) == 1
    code, out, _ = run("build", "diff", str(rubrics), str(round2 / "refine" / "rubrics.jsonl"))
    assert code == 0

    code, _, err = run("build", "refine", "--workdir", str(round2), "--input", "nope.jsonl", *base)
    assert code == 2
    assert "nope.jsonl" in err
    half = tmp_path / "half.jsonl"
    half.write_text('{"id": "q", "meta_rubric": {"id": "q"}}\n{"id": "r", "meta_ru')
    round3 = tmp_path / "round-3"
    code, _, err = run("build", "refine", "--workdir", str(round3), "--input", str(half), *base)
    assert code == 2
    assert f"{half}:1:meta_rubric.items: required field is missing [required]" in err
    assert "[torn-line]" in err  # cut mid-line
    assert not round3.exists()  # nothing written, not even the cache
    code, out, _ = run("build", "refine", "--help")
    assert "--input" in out
    assert "refine/rubrics.jsonl" in out
