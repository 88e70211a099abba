"""Edits propagate, through the HTTP API: an entity correction, a reworded question and an
edited meta-rubric item re-derive what is made from them or mark it stale, and the export
never holds a stale derived field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import RUBRIC, Client, Workspace, editor, rubric_row, write_jsonl

from gamut_eval.annotate import Database, add_user, export_dataset, import_files
from gamut_eval.annotate._db import Role, Rubric
from gamut_eval.dataset import load_dataset
from gamut_eval.errors import ValidationError
from gamut_eval.rubric import MetaRubric, compile_rubric

COMPILED = compile_rubric(MetaRubric.model_validate(RUBRIC))
TEXT_ONLY = "What is Bibimbap and what goes into it?"


@pytest.fixture
def ann(db: Database, workspace: Workspace) -> Client:
    """A signed-in annotator, with the rubric imported with its text-only question and the
    build's review key."""
    row = rubric_row(
        question_text_only=TEXT_ONLY,
        metadata={"build": {"candidate_id": "c-dish-1", "review": "rev-1"}},
    )
    import_files(db, [write_jsonl(workspace.root / "dataset.jsonl", [row])])
    return Client(db).login(add_user(db, "ann1", Role.ANNOTATOR).token)


def exported(db: Database, tmp_path: Path, name: str = "out.jsonl") -> dict[str, Any]:
    out = tmp_path / name
    export_dataset(db, out)
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    load_dataset(out)  # what the export writes is a valid dataset
    return dict(row)


def test_entity_correction_renames_the_entity_in_the_text_only_question(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    response = ann.post(
        "/rubrics/1/entity", {"version": 1, "entity": "Japchae", "comment": "noodles"}
    )
    assert response.status_code == 303
    page = ann.get("/rubrics/1").text
    assert "What is Japchae and what goes into it?" in page
    assert "stranger_test" in page  # the stale notice

    row = exported(db, tmp_path)
    assert row["entity"] == "Japchae"
    assert row["meta_rubric"]["entity"] == "Japchae"
    assert row["question_text_only"] == "What is Japchae and what goes into it?"
    stale = row["metadata"]["annotation"]["stale"]
    assert set(stale) == {"stranger_test"}
    assert stale["stranger_test"]["by"] == "ann1"
    assert stale["stranger_test"]["review"] == "rev-1"
    assert "old entity ('Bibimbap')" in stale["stranger_test"]["reason"]
    [event] = [e for e in row["metadata"]["annotation"]["rubric"]["events"] if e["by"] == "ann1"]
    assert event["before"] == {"entity": "Bibimbap", "question_text_only": TEXT_ONLY}
    assert event["after"]["question_text_only"] == "What is Japchae and what goes into it?"
    assert event["after"]["derived"]["question_text_only"] == "'Bibimbap' replaced by 'Japchae'"
    # The identity check still says bibimbap: people are told, the content is theirs.
    assert event["after"]["notes"] == ["checks naming the old entity 'Bibimbap': identity"]


def test_a_text_only_question_without_the_old_name_is_stale_and_not_exported(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    ann.post("/rubrics/1/entity", {"version": 1, "entity": "Kimbap"})
    # Corrected again: the text-only question names Kimbap now, and Kimbap is replaced.
    ann.post("/rubrics/1/entity", {"version": 2, "entity": "Japchae"})
    assert exported(db, tmp_path)["question_text_only"] == "What is Japchae and what goes into it?"
    # A wrong entity that the text-only question does not name: it cannot be fixed here.
    with db.write() as session, session.begin():
        rubric = session.get(Rubric, 1)
        assert rubric is not None
        rubric.question_text_only = "What is this noodle dish made of?"
    ann.post("/rubrics/1/entity", {"version": 3, "entity": "Bibimbap"})
    row = exported(db, tmp_path, "again.jsonl")
    assert "question_text_only" not in row
    assert set(row["metadata"]["annotation"]["stale"]) == {"question_text_only", "stranger_test"}
    record = load_dataset(tmp_path / "again.jsonl").records[0]
    assert record.text_only_question() == (
        "What is this dish and what goes into it?\n\n(The image shows Bibimbap.)"
    )


def test_rewording_the_question_marks_the_text_only_version_and_stranger_test_stale(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    new = "Which dish is this, and what is in it?"
    assert ann.post("/rubrics/1/question", {"version": 1, "question": "  "}).status_code == 422
    same = ann.post("/rubrics/1/question", {"version": 1, "question": RUBRIC["question"]})
    assert same.headers["location"] == "/rubrics/1?done=unchanged"
    leading = ann.post("/rubrics/1/question", {"version": 1, "question": "How is bibimbap made?"})
    assert leading.status_code == 422
    assert "the question names the entity (Bibimbap), so it fails the stranger test" in (
        leading.text
    )
    assert ann.post("/rubrics/1/question", {"version": 1, "question": new}).status_code == 303
    page = ann.get("/rubrics/1").text
    assert new in page
    assert "Stale: an edit changed what these were made from" in page

    row = exported(db, tmp_path)
    assert (row["question"], row["meta_rubric"]["question"]) == (new, new)
    assert "question_text_only" not in row
    assert set(row["metadata"]["annotation"]["stale"]) == {"question_text_only", "stranger_test"}
    assert load_dataset(tmp_path / "out.jsonl").records[0].text_only_question() == (
        f"{new}\n\n(The image shows Bibimbap.)"
    )


def test_editing_an_item_recompiles_the_checklist_and_keeps_peoples_check_edits(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    form = editor(COMPILED, 1, text={"identity": "Names the dish: bibimbap."})
    assert ann.post("/rubrics/1/checklist", form).status_code == 303
    toppings = {**RUBRIC["items"][2], "options": ["beef", "fried egg", "spinach", "kimchi"]}

    bad = ann.post("/rubrics/1/item", {"version": 2, "item_id": "toppings", "item": "{nope"})
    assert bad.status_code == 422
    assert "item toppings: not valid JSON" in bad.text
    renamed = json.dumps({**toppings, "id": "extras"})
    moved = ann.post("/rubrics/1/item", {"version": 2, "item_id": "toppings", "item": renamed})
    assert "its id must stay &#39;toppings&#39;" in moved.text
    broken = json.dumps({**toppings, "min_required": 9})
    invalid = ann.post("/rubrics/1/item", {"version": 2, "item_id": "toppings", "item": broken})
    assert invalid.status_code == 422
    assert "meta_rubric.items[2].min_required" in invalid.text
    assert "[threshold-range]" in invalid.text

    as_shown = MetaRubric.model_validate(RUBRIC).items[2].model_dump(mode="json", exclude_none=True)
    same = ann.post(
        "/rubrics/1/item", {"version": 2, "item_id": "toppings", "item": json.dumps(as_shown)}
    )
    assert same.headers["location"] == "/rubrics/1?done=unchanged"
    good = json.dumps(toppings)
    saved = ann.post("/rubrics/1/item", {"version": 2, "item_id": "toppings", "item": good})
    assert saved.headers["location"] == "/rubrics/1?done=item"
    row = exported(db, tmp_path)
    checks = {c["id"]: c for c in row["checklist"]["checks"]}
    assert checks["toppings/option-4"]["text"] == "Mentions kimchi among the toppings."
    assert checks["identity"]["text"] == "Names the dish: bibimbap."  # people's edit stays
    assert [c["id"] for c in row["checklist"]["checks"]] == [
        "identity",
        "core/item-1",
        "core/item-2",
        "toppings/min-2",
        "toppings/option-1",
        "toppings/option-2",
        "toppings/option-3",
        "toppings/option-4",
    ]
    assert row["meta_rubric"]["items"][2]["options"][3]["text"] == "kimchi"
    assert "stale" not in row["metadata"]["annotation"]
    assert row["question_text_only"] == TEXT_ONLY
    # The diff against the compiled checklist is against the edited items: only identity.
    changes = row["metadata"]["annotation"]["rubric"]["changes_vs_compiled"]
    assert list(changes["changed"]) == ["identity"]
    assert changes["added"] == changes["removed"] == []


def test_stale_marks_survive_a_round_that_does_not_recompute_them(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    new = "Which dish is this, and what is in it?"
    ann.post("/rubrics/1/question", {"version": 1, "question": new})
    first = exported(db, tmp_path)
    # The next round's rows: the same rubric, refined (an extra topping), no text-only yet.
    refined = json.loads(json.dumps(first))
    refined["meta_rubric"]["items"][2]["options"].append("kimchi")
    del refined["checklist"]
    path = write_jsonl(tmp_path / "refined.jsonl", [refined])
    [summary] = import_files(db, [path])
    assert "1 started their next revision round" in summary.describe()
    again = exported(db, tmp_path, "round2.jsonl")
    assert set(again["metadata"]["annotation"]["stale"]) == {"question_text_only", "stranger_test"}
    # A row with a fresh text-only version and a new review clears both marks.
    refined["question_text_only"] = "Which dish is bibimbap, and what is in it?"
    refined["metadata"]["build"]["review"] = "rev-2"
    import_files(db, [write_jsonl(tmp_path / "fresh.jsonl", [refined])])
    fresh = exported(db, tmp_path, "round3.jsonl")
    assert "stale" not in fresh["metadata"]["annotation"]
    assert fresh["question_text_only"] == "Which dish is bibimbap, and what is in it?"


def test_a_build_stage_file_is_refused_naming_the_file_to_import(
    db: Database, tmp_path: Path
) -> None:
    refined = {"question_id": "dish", "meta_rubric": RUBRIC, "checklist": {}, "audit": {}}
    path = write_jsonl(tmp_path / "refined.jsonl", [refined])
    with pytest.raises(ValidationError) as caught:
        import_files(db, [path])
    [detail] = caught.value.details
    assert detail.render() == (
        f"{path}:1:question_id: this is a build stage record (as in refine/refined.jsonl), not a "
        "dataset record; import refine/rubrics.jsonl (which `gamut build refine` writes beside "
        'refined.jsonl) or the build\'s dataset.jsonl [stage-record] (found: "dish")'
    )


def test_a_corrected_entity_the_question_names_fails_the_stranger_test(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    ann.post("/rubrics/1/entity", {"version": 1, "entity": "this dish"})
    stale = exported(db, tmp_path)["metadata"]["annotation"]["stale"]
    assert stale["stranger_test"]["reason"] == (
        "the question names the corrected entity ('this dish'), so it fails the stranger "
        "test: reword it to refer to the entity through what the photo shows"
    )
