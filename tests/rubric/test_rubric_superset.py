"""The structural superset check: every removal and change of a meta-rubric, with its path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gamut_eval.rubric import MetaRubric, validate_meta_rubric
from gamut_eval.rubric._superset import (
    RubricChange,
    diff_meta_rubrics,
    diff_rubric_sets,
    restore_superset,
    superset_problems,
)

BASE: dict[str, Any] = {
    "id": "q1",
    "question": "What is this dish?",
    "entity": "Bibimbap",
    "evidence": [{"id": "s1", "text": "one"}, {"id": "s2", "text": "two"}],
    "items": [
        {"id": "identity", "type": "fact", "tier": "answer_critical",
         "statement": "Identifies the dish as bibimbap.", "cites": ["s1"]},
        {"id": "core", "type": "strict_list", "tier": "answer_critical", "name": "core parts",
         "items": ["rice", {"text": "gochujang", "cites": ["s2"]}], "cites": ["s1"]},
        {"id": "veg", "type": "flexible_list", "tier": "valuable", "name": "vegetables",
         "options": ["spinach", "carrot", "bean sprouts"], "min_required": 2,
         "meta_insights": [{"statement": "The colours follow obangsaek.", "tier": "context"}],
         "cites": ["s1"]},
        {"id": "prep", "type": "process", "tier": "valuable", "name": "assembly",
         "steps": ["cook the rice", {"text": "top with namul", "required": False},
                   "stir before eating"], "cites": ["s2"]},
        {"id": "dolsot", "type": "relationship", "tier": "context", "entity": "Dolsot bibimbap",
         "relation": "a variant served in a hot stone bowl", "aspects": ["crispy rice"],
         "cites": ["s2"]},
        {"id": "trend", "type": "meta_insight", "tier": "context",
         "statement": "Vegetables dominate.", "about": "veg", "cites": ["s1"]},
    ],
}  # fmt: skip


def _rubric(edit: Callable[[dict[str, Any]], None] | None = None) -> MetaRubric:
    data = copy.deepcopy(BASE)
    if edit is not None:
        edit(data)
    return validate_meta_rubric(data)


def _item(data: dict[str, Any], item_id: str) -> dict[str, Any]:
    return next(i for i in data["items"] if i["id"] == item_id)


def _set(item_id: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: _item(d, item_id).__setitem__(key, value)


def _lines(edit: Callable[[dict[str, Any]], None]) -> list[str]:
    return [c.line() for c in diff_meta_rubrics(_rubric(), _rubric(edit))]


def test_the_same_rubric_has_no_difference() -> None:
    assert diff_meta_rubrics(_rubric(), _rubric()) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # The three a superset check must never pass: a dropped nested meta-insight, an
        # Answer-Critical identity demoted to Context, a list's threshold raised.
        (_set("veg", "meta_insights", []),
         ["q1 veg.meta_insights[1]: removed The colours follow obangsaek."]),
        (_set("identity", "tier", "context"),
         ["q1 identity.tier: changed answer_critical -> context"]),
        (_set("veg", "min_required", 3), ["q1 veg.min_required: changed [2] -> [3]"]),
        (lambda d: d["items"].pop(0),
         ["q1 identity: removed [fact, answer_critical] Identifies the dish as bibimbap."]),
        (_set("core", "items", ["rice"]), ["q1 core.items[2]: removed gochujang"]),
        (_set("veg", "options", ["spinach", "bean sprouts"]),
         ["q1 veg.options[2]: removed carrot", "q1 veg.options[3]: moved 3 -> 2"]),
        (_set("prep", "steps", ["cook the rice", "stir before eating",
                                {"text": "top with namul", "required": False}]),
         ["q1 prep.steps[2]: moved 2 -> 3", "q1 prep.steps[3]: moved 3 -> 2"]),
        (_set("prep", "steps", ["cook the rice", "top with namul", "stir before eating"]),
         ["q1 prep.steps[2].required: changed False -> True"]),
        (_set("dolsot", "aspects", []), ["q1 dolsot.aspects[1]: removed crispy rice"]),
        (_set("dolsot", "entity", "Jeonju bibimbap"),
         ["q1 dolsot.entity: changed Dolsot bibimbap -> Jeonju bibimbap"]),
        (_set("veg", "meta_insights", [{"statement": "The colours follow obangsaek."}]),
         ["q1 veg.meta_insights[1].tier: changed context -> None"]),
        (_set("veg", "coverage_thresholds", [3]),
         ["q1 veg.coverage_thresholds: changed None -> [3]"]),
        (_set("trend", "about", "core"), ["q1 trend.about: changed veg -> core"]),
        (_set("identity", "cites", ["s2"]),
         ["q1 identity.cites[s1]: removed s1", "q1 identity.cites[s2]: added s2"]),
        (_set("core", "items", ["rice", "gochujang"]), ["q1 core.items[2].cites[s2]: removed s2"]),
        (lambda d: d["evidence"][1].__setitem__("text", "other"),
         ["q1 evidence[s2]: changed two -> other"]),
        (lambda d: _item(d, "identity").update(type="meta_insight"),
         ["q1 identity.type: changed fact -> meta_insight"]),
        (lambda d: d.update(entity="Dolsot bibimbap"),
         ["q1 entity: changed Bibimbap -> Dolsot bibimbap"]),
        (lambda d: _item(d, "core").update(type="flexible_list", min_required=1,
                                          options=_item(d, "core").pop("items")),
         ["q1 core.type: changed strict_list -> flexible_list"]),
    ],
)  # fmt: skip
def test_every_removal_and_change_is_named_by_its_path(
    edit: Callable[[dict[str, Any]], None], expected: list[str]
) -> None:
    old, new = _rubric(), _rubric(edit)
    changes = diff_meta_rubrics(old, new)
    assert [c.line() for c in changes] == expected
    assert superset_problems(changes)
    assert not [c for c in diff_meta_rubrics(old, restore_superset(old, new)) if c.kind != "added"]


def test_additions_only_are_a_superset() -> None:
    def grow(d: dict[str, Any]) -> None:
        d["evidence"].append({"id": "s3", "text": "three"})
        _item(d, "veg")["options"].append({"text": "zucchini", "cites": ["s3"]})
        _item(d, "veg")["meta_insights"].append({"statement": "Most are blanched."})
        _item(d, "prep")["steps"].append("serve")
        _item(d, "identity")["cites"].append("s3")
        d["items"].append({"id": "egg", "type": "fact", "tier": "valuable",
                           "statement": "Mentions the fried egg.", "cites": ["s3"]})  # fmt: skip

    changes = diff_meta_rubrics(_rubric(), _rubric(grow))
    assert [c.line() for c in changes] == [
        "q1 evidence[s3]: added three",
        "q1 identity.cites[s3]: added s3",
        "q1 veg.meta_insights[2]: added Most are blanched.",
        "q1 veg.options[4]: added zucchini",
        "q1 prep.steps[4]: added serve",
        "q1 egg: added [fact, valuable] Mentions the fried egg.",
    ]
    assert {c.kind for c in changes} == {"added"}
    assert superset_problems(changes) == []


def test_rewording_is_a_change_unless_allowed() -> None:
    def reword(d: dict[str, Any]) -> None:
        _item(d, "identity")["statement"] = "Identifies the dish as bibimbap, a Korean rice bowl."
        _item(d, "veg")["options"][1] = "carrots"
        _item(d, "veg")["options"][2] = "Bean sprouts."

    changes = diff_meta_rubrics(_rubric(), _rubric(reword))
    assert [(c.path, c.kind) for c in changes] == [
        ("identity.statement", "reworded"),
        ("veg.options[2].text", "reworded"),
        ("veg.options[3].text", "reworded"),
    ]
    assert (changes[1].before, changes[1].after) == ("carrot", "carrots")
    assert len(superset_problems(changes)) == 3
    assert superset_problems(changes, allow_rewording=True) == []


def test_a_replaced_element_is_not_a_rewording() -> None:
    replaced = _set("veg", "options", ["spinach", "kimchi", "bean sprouts"])
    changes = diff_meta_rubrics(_rubric(), _rubric(replaced))
    assert [c.line() for c in changes] == [
        "q1 veg.options[2]: removed carrot",
        "q1 veg.options[2]: added kimchi",
    ]
    assert len(superset_problems(changes, allow_rewording=True)) == 1


def test_a_reworded_element_whose_citation_went_is_still_a_problem_with_rewording_allowed() -> None:
    changes = diff_meta_rubrics(_rubric(), _rubric(_set("core", "items", ["rice", "Gochujang"])))
    problems = superset_problems(changes, allow_rewording=True)
    assert [c.path for c in problems] == ["core.items[2].cites[s2]"]


def test_rubric_sets_are_matched_by_question_id() -> None:
    other = _rubric(lambda d: d.update(id="q2"))
    changes = diff_rubric_sets({"q1": _rubric(), "q2": other}, {"q1": _rubric(), "q3": other})
    assert changes == [
        RubricChange(question="q2", path="", kind="removed", before="the rubric (6 items)"),
        RubricChange(question="q3", path="", kind="added", after="the rubric (6 items)"),
    ]
    assert changes[0].line() == "q2: removed the rubric (6 items)"


def test_restoring_keeps_additions_and_lets_the_callers_drops_go() -> None:
    def weaken(d: dict[str, Any]) -> None:
        d["items"] = [i for i in d["items"] if i["id"] != "dolsot"]
        _item(d, "veg")["options"] = ["kale", "spinach"]
        _item(d, "identity")["tier"] = "valuable"
        _item(d, "identity")["cites"] = []
        _item(d, "identity")["cites"] = ["s2"]

    restored = restore_superset(_rubric(), _rubric(weaken), drop_cites={"s1"}, drop_items={"x"})
    assert [c.line() for c in diff_meta_rubrics(_rubric(), restored)] == [
        "q1 evidence[s1]: removed one",
        "q1 identity.cites[s1]: removed s1",
        "q1 identity.cites[s2]: added s2",
        "q1 core.cites[s1]: removed s1",
        "q1 veg.cites[s1]: removed s1",
        "q1 veg.options[4]: added kale",
        "q1 trend.cites[s1]: removed s1",
    ]
    assert [i.id for i in restored.items] == ["identity", "core", "veg", "prep", "dolsot", "trend"]
