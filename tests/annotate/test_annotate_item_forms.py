"""Meta-rubric items are edited through forms of their type (fields, rows that can be
added, removed and reordered, citations picked from the evidence), with the checks they
compile to previewed before saving; and the rubric page is a queue with progress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import RUBRIC, Client, Workspace, rubric_row, write_jsonl

from gamut_eval.annotate import Database, Role, add_user, export_dataset, import_files
from gamut_eval.annotate._errors import FormError
from gamut_eval.annotate._pages import item_from_form


@pytest.fixture
def ann(db: Database, workspace: Workspace) -> Client:
    rows = [rubric_row({**RUBRIC, "id": rid}) for rid in ("q-dish", "q-dish-2", "q-dish-3")]
    import_files(db, [write_jsonl(workspace.root / "dataset.jsonl", rows)])
    return Client(db).login(add_user(db, "ann1", Role.ANNOTATOR).token)


def toppings_form(**fields: str) -> dict[str, Any]:
    """The toppings item's form as the page shows it, with ``fields`` changed."""
    form = {
        "version": "1", "item_id": "toppings", "type": "flexible_list", "tier": "valuable",
        "name": "toppings", "min_required": "2", "coverage_thresholds": "",
        "el-0-text": "beef", "el-0-cites": "", "el-1-text": "fried egg", "el-1-cites": "",
        "el-2-text": "spinach", "el-2-cites": "", "el-3-text": "", "el-3-cites": "",
        "mi-0-statement": "", "mi-0-tier": "", "mi-0-cites": "", "comment": "",
    }  # fmt: skip
    return {**form, **fields}


def exported(db: Database, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "out.jsonl"
    export_dataset(db, out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return dict(next(r for r in rows if r["id"] == "q-dish"))


def test_each_item_has_a_form_of_its_type_and_no_json(ann: Client) -> None:
    page = ann.get("/rubrics/1").text
    assert 'name="statement"' in page  # the fact
    assert "Identifies the dish as bibimbap." in page
    assert 'name="min_required" value="2"' in page  # the flexible list
    for n, option in enumerate(["beef", "fried egg", "spinach"]):
        field = f'name="el-{n}-text" rows="1" aria-label="Options {n + 1}">{option}</textarea>'
        assert field in page
    assert 'name="el-3-text"' in page  # a blank row to add one without script
    assert 'name="cite-s1" value="1" checked' in page  # identity cites s1, picked
    assert '<datalist id="evidence-ids"><option value="s1">' in page
    assert 'name="item"' not in page  # no raw JSON box


def test_the_form_adds_reorders_and_cites_and_the_checklist_follows(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    # kimchi added in the blank row, spinach moved first, kimchi citing s1, at least 3
    form = toppings_form(
        **{"el-0-text": "spinach", "el-2-text": "beef", "el-3-text": "kimchi",
           "el-3-cites": "s1", "min_required": "3", "cite-s1": "1"}
    )  # fmt: skip
    saved = ann.post("/rubrics/1/item", form)
    assert saved.headers["location"] == "/rubrics/1?done=item"
    row = exported(db, tmp_path)
    item = row["meta_rubric"]["items"][2]
    assert [o["text"] for o in item["options"]] == ["spinach", "fried egg", "beef", "kimchi"]
    assert item["options"][3]["cites"] == ["s1"]
    assert item["cites"] == ["s1"]
    assert item["min_required"] == [3]
    checks = {c["id"]: c["text"] for c in row["checklist"]["checks"]}
    assert checks["toppings/option-1"] == "Mentions spinach among the toppings."
    assert checks["toppings/option-4"] == "Mentions kimchi among the toppings."
    assert "toppings/min-3" in checks


def test_removing_a_row_removes_its_check(ann: Client, db: Database, tmp_path: Path) -> None:
    form = toppings_form(**{"el-1-text": ""})  # the fried egg row emptied (removed)
    assert ann.post("/rubrics/1/item", form).status_code == 303
    checks = [c["id"] for c in exported(db, tmp_path)["checklist"]["checks"]]
    assert [c for c in checks if c.startswith("toppings/option")] == [
        "toppings/option-1",
        "toppings/option-2",
    ]


def test_the_preview_shows_the_checks_and_saves_nothing(
    ann: Client, db: Database, tmp_path: Path
) -> None:
    before = exported(db, tmp_path)
    preview = ann.post("/rubrics/1/item/preview", toppings_form(**{"el-3-text": "kimchi"}))
    assert preview.status_code == 200
    assert "5 checks compiled from this item" in preview.text
    assert "Mentions kimchi among the toppings." in preview.text
    refused = ann.post("/rubrics/1/item/preview", toppings_form(min_required="9"))
    assert refused.status_code == 422
    assert "Would not be saved" in refused.text
    assert "[threshold-range]" in refused.text
    after = exported(db, tmp_path)
    assert after["meta_rubric"] == before["meta_rubric"]
    assert after["checklist"] == before["checklist"]


def test_a_malformed_threshold_is_named() -> None:
    form = toppings_form(min_required="two")
    named = r"at least: whole numbers separated by commas \(found 'two'\)"
    with pytest.raises(FormError, match=named):
        item_from_form("toppings", form)


def test_every_item_type_comes_back_from_its_form() -> None:
    process = item_from_form(
        "steps",
        {"type": "process", "tier": "valuable", "name": "making it",
         "el-0-text": "cook the rice", "el-1-text": "fry the egg", "el-1-optional": "1",
         "el-2-text": "  ", "mi-0-statement": "Order matters.", "mi-0-tier": "context",
         "mi-0-cites": "s1, s2"},
    )  # fmt: skip
    assert process == {
        "id": "steps", "type": "process", "tier": "valuable", "name": "making it",
        "steps": [{"text": "cook the rice"}, {"text": "fry the egg", "required": False}],
        "meta_insights": [
            {"statement": "Order matters.", "tier": "context", "cites": ["s1", "s2"]}
        ],
    }  # fmt: skip
    relation = item_from_form(
        "rel", {"type": "relationship", "tier": "context", "entity": "rice",
                "relation": "is the base of", "el-0-text": "", "cite-s1": "1"}
    )  # fmt: skip
    assert relation == {
        "id": "rel", "type": "relationship", "tier": "context", "cites": ["s1"],
        "entity": "rice", "relation": "is the base of",
    }  # fmt: skip
    insight = item_from_form(
        "why", {"type": "meta_insight", "tier": "valuable", "statement": "Balance.", "about": ""}
    )
    assert insight == {
        "id": "why", "type": "meta_insight", "tier": "valuable", "statement": "Balance."
    }  # fmt: skip


def test_the_rubric_page_is_a_queue_with_progress(ann: Client) -> None:
    first = ann.get("/rubrics/1").text
    assert '<a class="queue-link button" rel="next" href="/rubrics/2">' in first
    assert 'rel="prev"' not in first
    assert "open rubric 1 of 3" in first
    assert "round 1: 0/3 done" in first
    middle = ann.get("/rubrics/2").text
    assert 'rel="prev" href="/rubrics/1"' in middle
    assert 'rel="next" href="/rubrics/3"' in middle
    assert ann.post("/rubrics/1/complete", {"version": "1"}).status_code == 303
    middle = ann.get("/rubrics/2").text
    assert 'rel="prev"' not in middle  # rubric 1 is done: no longer in the queue
    assert "open rubric 1 of 2" in middle
    assert "round 1: 1/3 done" in middle
    assert "round 1 by reviewer: ann1 1" in middle
