"""``refine`` from any stage: drafts, its own output, the annotation app's export after a
human round; and its rubrics file, which the app imports for the next round."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from construct_helpers import Call, Responder, read_jsonl, write_jsonl
from sqlalchemy import select
from test_construct_refine import _draft, _queries, _with_squid

from gamut_eval.annotate import Database, Rubric, export_dataset, import_files
from gamut_eval.construct import BuildSession, LocalSearch, ResearchSettings, run_refine
from gamut_eval.construct._models import RefinedRecord
from gamut_eval.errors import ValidationError
from gamut_eval.rubric import (
    Checklist,
    MetaRubric,
    compile_rubric,
    diff_meta_rubrics,
    superset_problems,
)


async def _refine(
    workdir: Path, corpus: Path, responder: Responder, source: Path | None = None
) -> Any:
    async with BuildSession(workdir, responder.model()) as session:
        return await run_refine(
            session, LocalSearch(corpus), research=ResearchSettings(1, 3, 2), source=source
        )


def _squid_rebuild(call: Call) -> str:
    return json.dumps({"items": _with_squid(call.data("Draft items")), "dropped": []})


def _records(workdir: Path) -> list[RefinedRecord]:
    return [RefinedRecord.model_validate(r) for r in read_jsonl(workdir / "refine/refined.jsonl")]


async def test_refined_rubrics_are_written_for_the_annotation_app_and_it_imports_them(
    manifest: Path, workdir: Path, corpus: Path, tmp_path: Path
) -> None:
    draft = _draft(workdir, corpus, manifest.parent / "bowl.png")
    report = await _refine(workdir, corpus, Responder({"queries": _queries}))

    assert report.failed == 0
    [row] = read_jsonl(workdir / "refine" / "rubrics.jsonl")
    assert "checklist" not in row  # the app re-compiles and carries the last round's edits
    assert (row["id"], row["entity"], row["image"]) == ("bowl", "Bibimbap", "images/bowl.png")
    # the image lay outside the output's folder: it is brought in, so the file is whole
    image = workdir / "refine" / row["image"]
    assert image.read_bytes() == (manifest.parent / "bowl.png").read_bytes()
    assert row["metadata"]["build"] == {"candidate_id": "bowl-c1"}
    assert row["metadata"]["refine"]["input"] == "draft"
    assert MetaRubric.model_validate(row["meta_rubric"]) == _records(workdir)[0].meta_rubric
    assert report.outputs["rubrics"] == str(workdir / "refine" / "rubrics.jsonl")
    db = Database.open(tmp_path / "annotate.sqlite")
    [summary] = import_files(db, [workdir / "refine" / "rubrics.jsonl"])
    assert "1 rubrics (1 new" in summary.describe()
    assert "1 new images" in summary.describe()
    db.close()
    assert superset_problems(diff_meta_rubrics(draft, _records(workdir)[0].meta_rubric)) == []


async def test_refine_takes_a_drafts_file_without_the_build_folder_it_came_from(
    manifest: Path, workdir: Path, corpus: Path, tmp_path: Path
) -> None:
    draft = _draft(workdir, corpus, manifest.parent / "bowl.png")
    other = tmp_path / "elsewhere"
    responder = Responder({"queries": _queries, "rebuild": _squid_rebuild})
    report = await _refine(other, corpus, responder, workdir / "draft" / "drafts.jsonl")

    assert report.failed == 0
    [refined] = _records(other)
    assert [c.line() for c in refined.changes if c.path != "evidence[r1]"] == [
        "bowl toppings.options[4]: added squid"
    ]
    [search] = responder.of("queries")  # the question and entity come from the meta-rubric
    assert draft.question in search.user
    [row] = read_jsonl(other / "refine" / "rubrics.jsonl")
    assert ("image" in row, row["metadata"]["refine"]["input"]) == (False, "draft")


async def test_refine_takes_its_own_output_again(
    manifest: Path, workdir: Path, corpus: Path, tmp_path: Path
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    await _refine(workdir, corpus, Responder({"queries": _queries, "rebuild": _squid_rebuild}))
    [first] = _records(workdir)
    for name in ("refined.jsonl", "rubrics.jsonl"):
        again = tmp_path / name.replace(".", "-")
        responder = Responder({"queries": _queries})
        report = await _refine(again, corpus, responder, workdir / "refine" / name)
        assert report.failed == 0
        [second] = _records(again)
        assert second.meta_rubric == first.meta_rubric  # the echoing rebuild adds nothing
        assert second.restored == ()
        rebuilt = responder.of("rebuild")[0].data("Draft items")
        assert "squid" in json.dumps(rebuilt)  # it refined the refined rubric
        [row] = read_jsonl(again / "refine" / "rubrics.jsonl")
        assert row["metadata"]["refine"]["input"] == name.split(".")[0].replace(
            "rubrics", "dataset"
        )


def _people_edit(db: Database) -> Checklist:
    """What an annotator does in the app: reword the identity check and the threshold check,
    remove one topping's check (stored as the editor stores a save)."""
    with db.write() as session, session.begin():
        rubric = session.scalars(select(Rubric)).one()
        checklist = Checklist.model_validate_json(rubric.checklist)
        checks = []
        for check in checklist.checks:
            if check.id == "toppings/option-3":
                continue
            if check.id == "identity":
                check = check.model_copy(update={"text": "Names the dish: bibimbap."})
            if check.id == "toppings/min-1":
                check = check.model_copy(update={"text": "Names a topping (beef, egg, tofu)."})
            checks.append(check)
        revised = checklist.model_copy(update={"checks": tuple(checks)})
        rubric.checklist = revised.model_dump_json()
    return revised


async def test_a_human_round_export_is_refined_and_peoples_edits_are_carried_not_lost(
    manifest: Path, workdir: Path, corpus: Path, tmp_path: Path
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    await _refine(workdir, corpus, Responder({"queries": _queries}))
    db = Database.open(tmp_path / "annotate.sqlite")
    import_files(db, [workdir / "refine" / "rubrics.jsonl"])
    revised = _people_edit(db)
    export_dataset(db, tmp_path / "revised-1.jsonl")

    round2 = tmp_path / "round-2"
    responder = Responder({"queries": _queries, "rebuild": _squid_rebuild})
    report = await _refine(round2, corpus, responder, tmp_path / "revised-1.jsonl")

    assert report.failed == 0
    [refined] = _records(round2)
    assert [(e.check, e.kind, e.fits) for e in refined.people_edits] == [
        ("identity", "changed", True),  # the refinement left it: the app re-applies it
        ("toppings/min-1", "changed", False),  # its text lists every option, squid now too
        ("toppings/option-3", "removed", True),
    ]
    notes = "\n".join(report.notes)
    assert "3 checklist edit(s) by people: 2 still fit the refined rubric" in notes
    assert "bowl toppings/min-1: changed by people: [V] Mentions at least 1 of" in notes
    [row] = read_jsonl(round2 / "refine" / "rubrics.jsonl")
    assert "checklist" not in row
    assert row["metadata"]["refine"]["revised_checklist"] == revised.model_dump(mode="json")
    assert [e["check"] for e in row["metadata"]["refine"]["people_edits"]] == [
        "identity",
        "toppings/min-1",
        "toppings/option-3",
    ]
    assert "annotation" in row["metadata"]  # the previous round's provenance travels along
    assert row["image"] == "images/bowl.png"  # brought into the output's folder

    [summary] = import_files(db, [round2 / "refine" / "rubrics.jsonl"])
    assert "1 started their next revision round" in summary.describe()
    with db.write() as session:
        rubric = session.scalars(select(Rubric)).one()
        checks = Checklist.model_validate_json(rubric.checklist).by_id()
        assert rubric.round == 2
    db.close()
    assert checks["identity"].text == "Names the dish: bibimbap."
    assert "toppings/option-3" not in checks
    compiled = compile_rubric(refined.meta_rubric).by_id()
    assert checks["toppings/option-4"] == compiled["toppings/option-4"]  # squid, the addition
    assert checks["toppings/min-1"] == compiled["toppings/min-1"]  # both changed: refined wins


async def test_a_row_with_neither_entity_nor_image_is_refused_before_any_call(
    workdir: Path, corpus: Path, tmp_path: Path
) -> None:
    rubric = {
        "id": "q",
        "question": "What is this?",
        "evidence": [{"id": "s1", "text": "t"}],
        "items": [
            {"id": "a", "type": "fact", "tier": "context", "statement": "x", "cites": ["s1"]}
        ],
    }
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": "q", "question": "What is this?",
                                                "meta_rubric": rubric}])  # fmt: skip
    responder = Responder(forbid=True)
    with pytest.raises(ValidationError) as info:
        await _refine(workdir, corpus, responder, path)
    assert f"{path}:1:entity" in str(info.value)
    assert "[entity-or-image]" in str(info.value)
    assert responder.calls == []
    assert not (workdir / "refine").exists()
