"""Validation rules of docs/method.md ([R1]-[R11]): every error names the file, the JSON path,
the rule and the value found, and all errors of a file are reported at once."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gamut_eval.errors import ErrorDetail, InputError, ValidationError
from gamut_eval.rubric import (
    MetaRubric,
    compile_rubric,
    load_meta_rubric,
    validate_meta_rubric,
)

ABSENT = object()  # the detail must carry no value (a missing field)
ANY = object()  # the detail carries a value, not compared here


def doc(*items: dict[str, Any], **top: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "q-1",
        "question": "What is this?",
        "evidence": [{"id": "s1", "text": "one"}, {"id": "s2", "text": "two"}],
        "items": list(items) or [fact("a")],
    }
    base.update(top)
    return base


def fact(item_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": item_id, "type": "fact", "tier": "valuable", "statement": "S.", **extra}


def strict(item_id: str, elements: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "strict_list",
        "tier": "valuable",
        "name": "parts",
        "items": elements,
        **extra,
    }


def flexible(item_id: str, options: list[Any], min_required: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "flexible_list",
        "tier": "answer_critical",
        "name": "options",
        "options": options,
        "min_required": min_required,
        **extra,
    }


def process(item_id: str, steps: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "process",
        "tier": "valuable",
        "name": "steps",
        "steps": steps,
        **extra,
    }


def relationship(item_id: str, aspects: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "relationship",
        "tier": "context",
        "entity": "other",
        "relation": "a rival",
        "aspects": aspects,
        **extra,
    }


def insight(item_id: str, about: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "meta_insight",
        "tier": "context",
        "statement": "A trend.",
        "about": about,
        **extra,
    }


def details_of(data: Any, file: str | None = None) -> list[ErrorDetail]:
    with pytest.raises(ValidationError) as info:
        validate_meta_rubric(data, file=file)
    assert info.value.details, "a ValidationError must carry at least one detail"
    return info.value.details


def assert_error(data: Any, path: str, rule: str, value: Any = ABSENT) -> ErrorDetail:
    """``data`` fails with a detail at ``path`` with ``rule`` (and ``value`` found)."""
    details = details_of(data)
    matching = [d for d in details if d.path == path and d.rule == rule]
    assert matching, f"no {rule} error at {path}; got {[(d.path, d.rule) for d in details]}"
    detail = matching[0]
    if value is ABSENT:
        assert "found:" not in detail.render()
    elif value is ANY:
        assert "(found: " in detail.render()
    else:
        assert detail.value == value
        assert f"(found: {json.dumps(value, ensure_ascii=False)})" in detail.render()
    assert f"[{rule}]" in detail.render()
    assert detail.render().startswith(f"{path}: ")
    assert_rendered_from_file(data, detail)
    return detail


def assert_rendered_from_file(data: Any, detail: ErrorDetail) -> None:
    """Loaded from a file, the same problem is reported and its rendering names the file."""
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "rubric.json"
        file.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        with pytest.raises(ValidationError) as info:
            load_meta_rubric(file)
    located = [d for d in info.value.details if (d.path, d.rule) == (detail.path, detail.rule)]
    assert located, "the problem is not reported when the document is loaded from a file"
    assert located[0].file == str(file)
    assert f"{file}:{detail.path}: " in str(info.value)


def test_the_fixture_document_is_valid() -> None:
    meta = validate_meta_rubric(
        doc(
            fact("f", cites=["s1"]),
            strict("s", ["x", {"text": "y", "cites": ["s2"]}]),
            flexible("l", ["a", "b", "c"], [1, 2], coverage_thresholds=[3]),
            process("p", ["a", {"text": "b", "required": False}]),
            relationship("r", ["x"]),
            insight("i", about="l"),
        )
    )
    assert isinstance(meta, MetaRubric)
    assert len(meta.items) == 6


# --------------------------------------------------------------------------- required / blank


@pytest.mark.parametrize("field", ["id", "question", "items"])
def test_required_top_level_field_missing(field: str) -> None:
    data = doc()
    del data[field]
    assert_error(data, field, "required")


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (fact("a"), "statement"),
        (fact("a"), "tier"),
        (fact("a"), "id"),
        (strict("a", ["x"]), "name"),
        (strict("a", ["x"]), "items"),
        (flexible("a", ["x", "y"], 1), "options"),
        (flexible("a", ["x", "y"], 1), "min_required"),
        (process("a", ["x", "y"]), "steps"),
        (relationship("a", []), "entity"),
        (relationship("a", []), "relation"),
        (insight("a"), "statement"),
    ],
)
def test_required_item_field_missing(item: dict[str, Any], field: str) -> None:
    item = dict(item)
    del item[field]
    assert_error(doc(fact("ok"), item), f"items[1].{field}", "required")


def test_required_evidence_and_element_fields_missing() -> None:
    assert_error(doc(evidence=[{"id": "s1"}]), "evidence[0].text", "required")
    assert_error(doc(strict("a", ["x", {"cites": []}])), "items[0].items[1].text", "required")
    assert_error(
        doc(strict("a", ["x"], meta_insights=[{"tier": "valuable"}])),
        "items[0].meta_insights[0].statement",
        "required",
    )


@pytest.mark.parametrize(
    ("data", "path", "value"),
    [
        (doc(question="   "), "question", "   "),
        (doc(fact("a", statement="\t\n ")), "items[0].statement", "\t\n "),
        (doc(strict("a", ["x"], name=" ")), "items[0].name", " "),
        (doc(evidence=[{"id": "s1", "text": "  "}]), "evidence[0].text", "  "),
        (doc(evidence=[{"id": " ", "text": "t"}]), "evidence[0].id", " "),
        (doc(fact("a", cites=[" "])), "items[0].cites[0]", " "),
        (doc(relationship("a", [], entity=" ")), "items[0].entity", " "),
        (doc(relationship("a", [], relation="")), "items[0].relation", ""),
        (doc(insight("a", statement=" ")), "items[0].statement", " "),
        (
            doc(strict("a", ["x"], meta_insights=[{"statement": "  "}])),
            "items[0].meta_insights[0].statement",
            "  ",
        ),
    ],
)
def test_blank_after_stripping(data: dict[str, Any], path: str, value: str) -> None:
    assert_error(data, path, "non-empty", value)


@pytest.mark.parametrize(
    ("item", "path"),
    [
        (strict("a", ["x", "  "]), "items[0].items[1].text"),
        (strict("a", ["x", {"text": " "}]), "items[0].items[1].text"),
        (flexible("a", ["x", "y", "\t"], 1), "items[0].options[2].text"),
        (process("a", ["x", {"text": " ", "required": False}]), "items[0].steps[1].text"),
        (process("a", ["x", " "]), "items[0].steps[1].text"),
        (relationship("a", [" "]), "items[0].aspects[0].text"),
    ],
)
def test_blank_list_elements(item: dict[str, Any], path: str) -> None:
    detail = assert_error(doc(item), path, "non-empty", ANY)
    assert isinstance(detail.value, str)
    assert not detail.value.strip()


def test_empty_items() -> None:
    assert_error(doc(items=[]), "items", "min-length", [])
    assert_error(doc(strict("a", [])), "items[0].items", "min-length", [])


# --------------------------------------------------------------------------- unknown fields


@pytest.mark.parametrize(
    ("data", "path", "name"),
    [
        (doc(rubric="x"), "rubric", "rubric"),
        (doc(fact("a", colour="red")), "items[0].colour", "colour"),
        (doc(fact("ok"), flexible("a", ["x", "y"], 1, minimum=1)), "items[1].minimum", "minimum"),
        (
            doc(strict("a", ["x", {"text": "y", "note": "n"}])),
            "items[0].items[1].note",
            "note",
        ),
        (
            doc(flexible("a", ["x", {"text": "y", "cite": ["s1"]}], 1)),
            "items[0].options[1].cite",
            "cite",
        ),
        (
            doc(process("a", ["x", {"text": "y", "optional": True}])),
            "items[0].steps[1].optional",
            "optional",
        ),
        (doc(relationship("a", [{"text": "x", "y": 1}])), "items[0].aspects[0].y", "y"),
        (doc(evidence=[{"id": "s1", "text": "t", "url": "u"}]), "evidence[0].url", "url"),
        (
            doc(strict("a", ["x"], meta_insights=[{"statement": "s", "about": "a"}])),
            "items[0].meta_insights[0].about",
            "about",
        ),
    ],
)
def test_unknown_fields_rejected(data: dict[str, Any], path: str, name: str) -> None:
    detail = assert_error(data, path, "unknown-field", name)
    assert name in detail.render()


@pytest.mark.parametrize(
    ("data", "path", "name"),
    [
        (
            doc(strict("a", ["x", {"text": "y", "process": 1}])),
            "items[0].items[1].process",
            "process",
        ),
        (doc(evidence=[{"id": "s1", "text": "t", "fact": "x"}]), "evidence[0].fact", "fact"),
    ],
)
def test_unknown_field_named_like_an_item_type(data: dict[str, Any], path: str, name: str) -> None:
    assert_error(data, path, "unknown-field", name)


# --------------------------------------------------------------------------- ids and references


def test_duplicate_item_ids() -> None:
    detail = assert_error(doc(fact("a"), fact("b"), fact("a")), "items[2].id", "unique-id", "a")
    assert "items[0]" in detail.message


def test_duplicate_evidence_ids() -> None:
    evidence = [{"id": "s1", "text": "x"}, {"id": "s2", "text": "y"}, {"id": "s2", "text": "z"}]
    detail = assert_error(doc(evidence=evidence), "evidence[2].id", "unique-id", "s2")
    assert "evidence[1]" in detail.message


def test_same_id_for_item_and_evidence_is_allowed() -> None:
    validate_meta_rubric(doc(fact("s1", cites=["s1"])))


@pytest.mark.parametrize(
    ("item", "path"),
    [
        (fact("a", cites=["s1", "s9"]), "items[0].cites[1]"),
        (strict("a", ["x", {"text": "y", "cites": ["s9"]}]), "items[0].items[1].cites[0]"),
        (
            flexible("a", [{"text": "x", "cites": ["s2", "s9"]}, "y"], 1),
            "items[0].options[0].cites[1]",
        ),
        (process("a", ["x", {"text": "y", "cites": ["s9"]}]), "items[0].steps[1].cites[0]"),
        (relationship("a", [{"text": "x", "cites": ["s9"]}]), "items[0].aspects[0].cites[0]"),
        (
            strict("a", ["x"], meta_insights=[{"statement": "m", "cites": ["s9"]}]),
            "items[0].meta_insights[0].cites[0]",
        ),
        (
            process("a", ["x", "y"], meta_insights=[{"statement": "m", "cites": ["s9"]}]),
            "items[0].meta_insights[0].cites[0]",
        ),
        (insight("a", cites=["s9"]), "items[0].cites[0]"),
        (relationship("a", [], cites=["s9"]), "items[0].cites[0]"),
    ],
)
def test_cites_to_unknown_evidence(item: dict[str, Any], path: str) -> None:
    assert_error(doc(item), path, "cite-exists", "s9")


def test_cites_without_any_evidence() -> None:
    data = doc(fact("a", cites=["s1"]))
    del data["evidence"]
    assert_error(data, "items[0].cites[0]", "cite-exists", "s1")


def test_about_a_missing_item() -> None:
    assert_error(
        doc(fact("a"), insight("m", about="nope")), "items[1].about", "about-exists", "nope"
    )


@pytest.mark.parametrize(
    "target",
    [fact("t"), relationship("t", []), insight("t")],
)
def test_about_a_non_list_item(target: dict[str, Any]) -> None:
    detail = assert_error(doc(target, insight("m", about="t")), "items[1].about", "about-type", "t")
    assert target["type"] in detail.message


@pytest.mark.parametrize(
    "target", [strict("t", ["x"]), flexible("t", ["x", "y"], 1), process("t", ["x", "y"])]
)
def test_about_a_list_or_process_is_fine(target: dict[str, Any]) -> None:
    validate_meta_rubric(doc(insight("m", about="t"), target))


def test_about_a_structurally_broken_item_is_not_called_missing() -> None:
    broken = flexible("t", ["x", "y"], 1, tier="bad")
    details = details_of(doc(broken, insight("m", about="t")))
    assert [(d.path, d.rule) for d in details] == [("items[0].tier", "allowed-value")]


def test_rule_errors_inside_a_structurally_broken_item_are_reported() -> None:
    data = doc(fact("a", tier="bad", cites=["s9"]), fact("a"))
    found = {(d.path, d.rule) for d in details_of(data)}
    assert {
        ("items[0].tier", "allowed-value"),
        ("items[0].cites[0]", "cite-exists"),
        ("items[1].id", "unique-id"),
    } <= found


# --------------------------------------------------------------------------- flexible lists


def test_flexible_list_with_one_option() -> None:
    assert_error(doc(flexible("a", ["x"], 1)), "items[0].options", "min-length", ["x"])


def test_flexible_list_with_no_options() -> None:
    assert_error(doc(flexible("a", [], 1)), "items[0].options", "min-length", [])


@pytest.mark.parametrize(
    ("min_required", "path", "value"),
    [
        (0, "items[0].min_required", 0),
        ([0], "items[0].min_required", 0),
        (-1, "items[0].min_required", -1),
        (4, "items[0].min_required", 4),
        ([1, 4], "items[0].min_required[1]", 4),
        ([0, 2], "items[0].min_required[0]", 0),
    ],
)
def test_baseline_out_of_range(min_required: Any, path: str, value: int) -> None:
    detail = assert_error(
        doc(flexible("a", ["x", "y", "z"], min_required)), path, "threshold-range", value
    )
    assert "(3)" in detail.message


@pytest.mark.parametrize("min_required", [[2, 1], [2, 2]])
def test_two_baselines_not_increasing(min_required: list[int]) -> None:
    assert_error(
        doc(flexible("a", ["x", "y", "z"], min_required)),
        "items[0].min_required",
        "threshold-order",
        min_required,
    )


def test_three_baselines() -> None:
    assert_error(
        doc(flexible("a", ["w", "x", "y", "z"], [1, 2, 3])),
        "items[0].min_required",
        "max-length",
        [1, 2, 3],
    )


def test_no_baselines() -> None:
    assert_error(doc(flexible("a", ["x", "y"], [])), "items[0].min_required", "min-length", [])


@pytest.mark.parametrize(
    ("coverage", "path", "rule", "value"),
    [
        ([5, 4], "items[0].coverage_thresholds[1]", "threshold-order", [5, 4]),
        ([4, 4], "items[0].coverage_thresholds[1]", "threshold-order", [4, 4]),
        ([3], "items[0].coverage_thresholds[0]", "threshold-range", 3),  # = max baseline
        ([2, 4], "items[0].coverage_thresholds[0]", "threshold-range", 2),  # below it
        ([4, 7], "items[0].coverage_thresholds[1]", "threshold-range", 7),  # > n = 6
    ],
)
def test_coverage_thresholds(coverage: list[int], path: str, rule: str, value: Any) -> None:
    item = flexible("a", [f"o{i}" for i in range(6)], [1, 3], coverage_thresholds=coverage)
    assert_error(doc(item), path, rule, value)


def test_coverage_threshold_equal_to_n_is_fine() -> None:
    validate_meta_rubric(doc(flexible("a", ["x", "y", "z"], 1, coverage_thresholds=[2, 3])))


# --------------------------------------------------------------------------- processes / duplicates


@pytest.mark.parametrize("steps", [["only"], []])
def test_process_needs_two_steps(steps: list[str]) -> None:
    assert_error(doc(process("a", steps)), "items[0].steps", "min-length", steps)


@pytest.mark.parametrize(
    ("item", "path", "value"),
    [
        (strict("a", ["Steamed rice", "steamed  RICE "]), "items[0].items[1]", "steamed  RICE "),
        (
            flexible("a", ["beef", "tofu", {"text": "BEEF", "cites": ["s1"]}], 1),
            "items[0].options[2]",
            "BEEF",
        ),
        (
            process("a", ["Boil water", {"text": "boil\twater", "required": False}]),
            "items[0].steps[1]",
            "boil\twater",
        ),
        (
            relationship("a", ["It is older", " it  is older"]),
            "items[0].aspects[1]",
            " it  is older",
        ),
    ],
)
def test_duplicate_elements_ignoring_case_and_whitespace(
    item: dict[str, Any], path: str, value: str
) -> None:
    detail = assert_error(doc(item), path, "unique-element", value)
    assert "[0]" in detail.message


def test_same_text_in_different_lists_is_fine() -> None:
    validate_meta_rubric(doc(strict("a", ["rice"]), flexible("b", ["rice", "egg"], 1)))


# --------------------------------------------------------------------------- tiers, types, ids


@pytest.mark.parametrize("tier", ["Valuable", "critical", "", "AC"])
def test_bad_tier(tier: str) -> None:
    assert_error(doc(fact("a", tier=tier)), "items[0].tier", "allowed-value", tier)


def test_bad_nested_insight_tier() -> None:
    item = strict("a", ["x"], meta_insights=[{"statement": "s", "tier": "high"}])
    assert_error(doc(item), "items[0].meta_insights[0].tier", "allowed-value", "high")


def test_bad_item_type() -> None:
    details = details_of(doc(fact("ok"), fact("a", type="list")))
    found = [d for d in details if d.rule == "item-type"]
    assert len(found) == 1
    assert found[0].path in ("items[1]", "items[1].type")
    assert "strict_list" in found[0].message
    assert '"list"' in found[0].render()


def test_missing_item_type() -> None:
    item = fact("a")
    del item["type"]
    details = details_of(doc(fact("ok"), item))
    assert [d.rule for d in details if d.path.startswith("items[1]")] == ["item-type"]


def test_bad_item_type_names_the_type_field_and_value() -> None:
    assert_error(doc(fact("ok"), fact("a", type="list")), "items[1].type", "item-type", "list")


@pytest.mark.parametrize("bad", ["a b", "a.b", "a/b", "", "é"])
def test_bad_item_id_pattern(bad: str) -> None:
    assert_error(doc(fact(bad)), "items[0].id", "id-pattern", bad)


@pytest.mark.parametrize("bad", ["q 1", "q/1", ""])
def test_bad_rubric_id_pattern(bad: str) -> None:
    assert_error(doc(id=bad), "id", "id-pattern", bad)


def test_rubric_id_may_contain_dots() -> None:
    assert validate_meta_rubric(doc(id="q.0001_a-b")).id == "q.0001_a-b"


# --------------------------------------------------------------------------- all at once


def test_all_errors_of_a_document_are_reported_at_once() -> None:
    data = doc(
        fact("a", tier="urgent"),  # structural error
        fact("b"),
        fact("b"),  # duplicate id elsewhere
        fact("c", cites=["s9"]),  # bad cite elsewhere
        flexible("d", ["x", "y"], [2, 1]),  # threshold order
        insight("e", about="zz"),  # about to a missing item
        evidence=[{"id": "s1", "text": "x"}, {"id": "s1", "text": "y"}],
    )
    found = {(d.path, d.rule) for d in details_of(data)}
    assert {
        ("items[0].tier", "allowed-value"),
        ("items[2].id", "unique-id"),
        ("items[3].cites[0]", "cite-exists"),
        ("items[4].min_required", "threshold-order"),
        ("items[5].about", "about-exists"),
        ("evidence[1].id", "unique-id"),
    } <= found


def test_all_structural_errors_are_reported_at_once() -> None:
    data = doc(fact("a", tier="x"), fact("b b"), strict("c", ["x"], extra=1), question=" ")
    found = {(d.path, d.rule) for d in details_of(data)}
    assert {
        ("question", "non-empty"),
        ("items[0].tier", "allowed-value"),
        ("items[1].id", "id-pattern"),
        ("items[2].extra", "unknown-field"),
    } <= found


def test_all_rule_errors_are_reported_at_once() -> None:
    data = doc(fact("a", cites=["x1", "x2"]), fact("a"), strict("s", ["p", "P"]))
    found = [(d.path, d.rule, d.value) for d in details_of(data)]
    assert sorted(found) == sorted(
        [
            ("items[0].cites[0]", "cite-exists", "x1"),
            ("items[0].cites[1]", "cite-exists", "x2"),
            ("items[1].id", "unique-id", "a"),
            ("items[2].items[1]", "unique-element", "P"),
        ]
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (doc(fact("a", tier="bad")), [("items[0].tier", "allowed-value")]),
        (
            doc(flexible("a", ["x", {"text": " "}], 1), fact("b")),
            [("items[0].options[1].text", "non-empty")],
        ),
    ],
)
def test_no_spurious_min_length_error(
    data: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert [(d.path, d.rule) for d in details_of(data)] == expected


def test_errors_name_the_file_given() -> None:
    details = details_of(doc(flexible("a", ["x", "y"], 3)), file="rubrics/q1.yaml")
    assert [d.file for d in details] == ["rubrics/q1.yaml"]
    assert details[0].render().startswith("rubrics/q1.yaml:items[0].min_required: ")


def test_non_mapping_document() -> None:
    for data in ([1, 2], "text", None, 3):
        details_of(data)


# --------------------------------------------------------------------------- files

YAML_DOC = """\
id: q-0001
question: "What dish is this?"
entity: Bibimbap
evidence:
  - id: s1
    text: "Bibimbap is a Korean rice dish."
items:
  - id: identity
    type: fact
    tier: answer_critical
    statement: "Identifies the dish as bibimbap."
    cites: [s1]
  - id: proteins
    type: flexible_list
    tier: valuable
    name: proteins
    options: [beef, tofu, {text: egg, cites: [s1]}]
    min_required: 2
"""


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_yaml_and_json_files_load(tmp_path: Path, suffix: str) -> None:
    import yaml

    data = yaml.safe_load(YAML_DOC)
    path = tmp_path / f"q{suffix}"
    path.write_text(json.dumps(data, indent=2) if suffix == ".json" else YAML_DOC, encoding="utf-8")
    meta = load_meta_rubric(path)
    assert meta == validate_meta_rubric(data)
    assert meta.id == "q-0001"
    assert [i.id for i in meta.items] == ["identity", "proteins"]
    assert load_meta_rubric(str(path)) == meta


def test_invalid_file_renders_the_file_and_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(YAML_DOC.replace("min_required: 2", "min_required: 5"), encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_meta_rubric(path)
    (detail,) = info.value.details
    assert (detail.path, detail.rule, detail.value) == (
        "items[1].min_required",
        "threshold-range",
        5,
    )
    assert detail.file == str(path)
    assert f"{path}:items[1].min_required:" in str(info.value)
    assert "[threshold-range]" in str(info.value)
    assert "(found: 5)" in str(info.value)


def test_every_error_is_rendered_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    data = doc(fact("a", tier="x"), fact("b"), fact("b", cites=["s9"]))
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_meta_rubric(path)
    lines = str(info.value).splitlines()
    assert len(lines) == len(info.value.details) >= 3
    assert all(line.startswith(f"{path}:") for line in lines)


def test_yaml_duplicate_keys_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    text = YAML_DOC.replace(
        "    tier: answer_critical\n", "    tier: answer_critical\n    tier: valuable\n"
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_meta_rubric(path)
    (detail,) = info.value.details
    assert detail.rule == "yaml-syntax"
    assert detail.path.startswith("line 11,")  # the second `tier:` key
    assert "duplicate key 'tier'" in detail.message
    assert str(path) in str(info.value)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: q\nquestion: 'x'\nitems: [\n  {id: a\n", encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_meta_rubric(path)
    (detail,) = info.value.details
    assert detail.rule == "yaml-syntax"
    assert detail.path.startswith("line ")
    assert str(path) in str(info.value)
    assert "line " in str(info.value)


def test_json_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "id": "q",\n  "question": "x",\n  "items": [,]\n}\n', encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_meta_rubric(path)
    (detail,) = info.value.details
    assert detail.rule == "json-syntax"
    assert detail.path.startswith("line 4,")
    assert f"{path}:line 4," in str(info.value)


def test_json_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"id": "q", "id": "r", "question": "x", "items": []}', encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_meta_rubric(path)
    (detail,) = info.value.details
    assert detail.rule == "json-syntax"
    assert "duplicate key 'id'" in detail.message


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_meta_rubric(tmp_path / "nope.yaml")


# --------------------------------------------------------------------------- shorthands, strictness


def test_min_required_shorthand_equals_a_one_element_list() -> None:
    short = validate_meta_rubric(doc(flexible("a", ["x", "y", "z"], 2)))
    full = validate_meta_rubric(doc(flexible("a", ["x", "y", "z"], [2])))
    assert short == full
    assert tuple(short.items[0].min_required) == (2,)  # type: ignore[union-attr]
    assert compile_rubric(short) == compile_rubric(full)


def test_string_elements_equal_text_objects() -> None:
    plain = validate_meta_rubric(
        doc(
            strict("s", ["x", "y"]),
            flexible("f", ["a", "b"], 1),
            process("p", ["one", "two"]),
            relationship("r", ["aspect"]),
        )
    )
    spelled = validate_meta_rubric(
        doc(
            strict("s", [{"text": "x"}, {"text": "y", "cites": []}]),
            flexible("f", [{"text": "a"}, {"text": "b"}], 1),
            process("p", [{"text": "one", "required": True}, {"text": "two"}]),
            relationship("r", [{"text": "aspect"}]),
        )
    )
    assert plain == spelled
    assert compile_rubric(plain) == compile_rubric(spelled)


@pytest.mark.parametrize(
    ("item", "path"),
    [
        (flexible("a", ["x", "y"], True), "items[0].min_required"),
        (flexible("a", ["x", "y"], [True]), "items[0].min_required[0]"),
        (flexible("a", ["x", "y"], [1, True]), "items[0].min_required[1]"),
        (
            flexible("a", ["x", "y", "z"], 1, coverage_thresholds=[True]),
            "items[0].coverage_thresholds[0]",
        ),
        (flexible("a", ["x", "y"], "2"), "items[0].min_required"),
        (flexible("a", ["x", "y"], 2.0), "items[0].min_required"),
    ],
)
def test_bools_and_other_non_ints_are_not_accepted_as_ints(item: dict[str, Any], path: str) -> None:
    details = details_of(doc(item))
    assert path in [d.path for d in details]


@pytest.mark.parametrize("value", ["no", "yes", 0, 1])
def test_step_required_must_be_a_real_bool(value: Any) -> None:
    details = details_of(doc(process("a", ["x", {"text": "y", "required": value}])))
    assert [d.path for d in details] == ["items[0].steps[1].required"]


def test_validation_does_not_mutate_the_input() -> None:
    data = doc(flexible("a", ["x", "y"], 1), process("p", ["a", "b"]))
    before = copy.deepcopy(data)
    validate_meta_rubric(data)
    assert data == before
