"""Compile rules of docs/method.md ([C1]-[C15]), with expected checklists written by hand from them.

Each expected row is ``(id, kind, tier, secondary, cites)``; texts are checked for a
representative subset. Tiers and kinds are spelled as plain strings so the expectations do
not depend on the enums under test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gamut_eval.rubric import (
    Check,
    Checklist,
    CompileConfig,
    FlexibleListItem,
    compile_rubric,
    coverage_thresholds,
    validate_meta_rubric,
)

AC, V, C = "answer_critical", "valuable", "context"

EVIDENCE = [{"id": f"s{i}", "text": f"snippet {i}"} for i in range(1, 6)]

Row = tuple[str, str, str, bool, tuple[str, ...]]


def compile_items(
    *items: dict[str, Any], config: CompileConfig | None = None, rubric_id: str = "q-1"
) -> Checklist:
    meta = validate_meta_rubric(
        {"id": rubric_id, "question": "What is this?", "evidence": EVIDENCE, "items": list(items)}
    )
    return compile_rubric(meta, config)


def rows(checklist: Checklist) -> list[Row]:
    return [
        (c.id, c.kind.value, c.tier.value, c.secondary, tuple(c.cites)) for c in checklist.checks
    ]


def texts(checklist: Checklist) -> dict[str, str]:
    return {c.id: c.text for c in checklist.checks}


def flexible(
    item_id: str,
    tier: str,
    options: list[Any],
    min_required: Any,
    *,
    name: str = "options",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "flexible_list",
        "tier": tier,
        "name": name,
        "options": options,
        "min_required": min_required,
        **extra,
    }


def process(item_id: str, tier: str, steps: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "process",
        "tier": tier,
        "name": "how it is made",
        "steps": steps,
        **extra,
    }


def opt(n: int) -> list[str]:
    return [f"option {i}" for i in range(1, n + 1)]


# ------------------------------------------------------ the meta-rubric example of the method

SPEC_EXAMPLE: dict[str, Any] = {
    "id": "q-0001",
    "question": "What dish is this and how is it usually made?",
    "entity": "Bibimbap",
    "evidence": [
        {
            "id": "s1",
            "text": "Bibimbap is a Korean rice dish ...",
            "source": "https://example.org/bibimbap",
            "title": "Bibimbap",
        }
    ],
    "items": [
        {
            "id": "identity",
            "type": "fact",
            "tier": "answer_critical",
            "statement": "Identifies the dish as bibimbap.",
            "cites": ["s1"],
        },
        {
            "id": "core",
            "type": "strict_list",
            "tier": "answer_critical",
            "name": "core components",
            "items": ["steamed rice", "seasoned vegetables", "gochujang"],
        },
        {
            "id": "proteins",
            "type": "flexible_list",
            "tier": "valuable",
            "name": "common protein toppings",
            "options": ["beef", "fried egg", "tofu", "chicken", "squid"],
            "min_required": 2,
            "coverage_thresholds": None,
            "meta_insights": [
                {
                    "statement": "Notes that a protein topping is almost always added.",
                    "tier": "valuable",
                }
            ],
        },
        {
            "id": "prep",
            "type": "process",
            "tier": "valuable",
            "name": "how it is assembled",
            "steps": [
                {"text": "Rice is placed in the bowl first", "required": True},
                {"text": "Vegetables are arranged on top", "required": True},
                {"text": "The bowl is heated in a stone pot", "required": False},
            ],
        },
        {
            "id": "dolsot",
            "type": "relationship",
            "tier": "context",
            "entity": "dolsot bibimbap",
            "relation": "a variant served in a sizzling stone bowl",
            "aspects": ["the rice forms a crisp crust"],
        },
        {
            "id": "trend",
            "type": "meta_insight",
            "tier": "context",
            "statement": "Explains that the dish is a template rather than a fixed recipe.",
            "about": "proteins",
        },
    ],
}


def test_spec_example_compiles_to_the_hand_written_checklist() -> None:
    checklist = compile_rubric(validate_meta_rubric(SPEC_EXAMPLE))
    assert checklist.rubric_id == "q-0001"
    assert rows(checklist) == [
        ("identity", "fact", AC, False, ("s1",)),
        ("core/item-1", "list_item", AC, False, ()),
        ("core/item-2", "list_item", AC, False, ()),
        ("core/item-3", "list_item", AC, False, ()),
        ("proteins/min-2", "list_threshold", V, False, ()),
        ("proteins/option-1", "list_option", C, True, ()),
        ("proteins/option-2", "list_option", C, True, ()),
        ("proteins/option-3", "list_option", C, True, ()),
        ("proteins/option-4", "list_option", C, True, ()),
        ("proteins/option-5", "list_option", C, True, ()),
        ("proteins/insight-1", "meta_insight", V, False, ()),
        ("prep/step-1", "step", V, False, ()),
        ("prep/step-2", "step", V, False, ()),
        ("prep/step-3", "step", C, True, ()),
        ("prep/sequence", "sequence", V, False, ()),
        ("prep/sequence-full", "sequence_full", C, True, ()),
        ("dolsot/entity", "relation_entity", C, False, ()),
        ("dolsot/aspect-1", "relation_aspect", C, False, ()),
        ("trend", "meta_insight", C, False, ()),
    ]
    t = texts(checklist)
    assert t["identity"] == "Identifies the dish as bibimbap."
    assert t["core/item-2"] == "Mentions seasoned vegetables as one of the core components."
    assert t["proteins/min-2"] == (
        "Mentions at least 2 of the following common protein toppings: "
        "beef; fried egg; tofu; chicken; squid."
    )
    assert t["proteins/option-3"] == "Mentions tofu among the common protein toppings."
    assert t["proteins/insight-1"] == "Notes that a protein topping is almost always added."
    assert t["prep/step-3"] == "Describes this step of how it is assembled: " + (
        "The bowl is heated in a stone pot."
    )
    assert t["prep/sequence"] == (
        "Presents these steps of how it is assembled in this relative order: "
        "(1) Rice is placed in the bowl first; (2) Vegetables are arranged on top."
    )
    assert t["prep/sequence-full"] == (
        "Presents these steps of how it is assembled in this relative order: "
        "(1) Rice is placed in the bowl first; (2) Vegetables are arranged on top; "
        "(3) The bowl is heated in a stone pot."
    )
    assert t["dolsot/entity"] == (
        "Identifies the related entity dolsot bibimbap (a variant served in a sizzling stone bowl)."
    )
    assert t["dolsot/aspect-1"] == (
        "About dolsot bibimbap (a variant served in a sizzling stone bowl), "
        "states that the rice forms a crisp crust."
    )
    assert t["trend"] == "Explains that the dish is a template rather than a fixed recipe."
    for check in checklist.checks:
        assert check.item == check.id.split("/")[0]


# --------------------------------------------------------------------------- fact / strict list


def test_fact_is_one_check_with_the_statement_verbatim() -> None:
    checklist = compile_items(
        {
            "id": "identity",
            "type": "fact",
            "tier": "valuable",
            "statement": "Identifies the dish as bibimbap.",
            "cites": ["s2", "s1"],
        }
    )
    assert rows(checklist) == [("identity", "fact", V, False, ("s2", "s1"))]
    assert checklist.checks[0].text == "Identifies the dish as bibimbap."
    assert checklist.checks[0].item == "identity"


@pytest.mark.parametrize("tier", [AC, V, C])
def test_strict_list_is_one_check_per_element_at_the_item_tier(tier: str) -> None:
    checklist = compile_items(
        {
            "id": "core",
            "type": "strict_list",
            "tier": tier,
            "name": "core components",
            "items": [
                "steamed rice",
                "seasoned vegetables.",
                {"text": "gochujang", "cites": ["s2"]},
            ],
            "cites": ["s1"],
        }
    )
    assert rows(checklist) == [
        ("core/item-1", "list_item", tier, False, ("s1",)),
        ("core/item-2", "list_item", tier, False, ("s1",)),
        ("core/item-3", "list_item", tier, False, ("s2",)),
    ]
    assert texts(checklist) == {
        "core/item-1": "Mentions steamed rice as one of the core components.",
        "core/item-2": "Mentions seasoned vegetables as one of the core components.",
        "core/item-3": "Mentions gochujang as one of the core components.",
    }


# --------------------------------------------------------------------------- flexible lists

SEVEN_DISHES = [
    "bibimbap",
    "bulgogi",
    "kimchi jjigae",
    "japchae",
    "tteokbokki",
    "galbi",
    "naengmyeon",
]


def test_papers_seven_dish_answer_critical_list() -> None:
    checklist = compile_items(
        flexible(
            "dishes",
            AC,
            SEVEN_DISHES,
            2,
            name="dishes that use gochujang",
        )
    )
    assert rows(checklist) == [
        ("dishes/min-2", "list_threshold", AC, False, ()),
        *[(f"dishes/option-{i}", "list_option", V, True, ()) for i in range(1, 8)],
    ]
    t = texts(checklist)
    assert t["dishes/min-2"] == (
        "Mentions at least 2 of the following dishes that use gochujang: "
        "bibimbap; bulgogi; kimchi jjigae; japchae; tteokbokki; galbi; naengmyeon."
    )
    assert t["dishes/option-1"] == "Mentions bibimbap among the dishes that use gochujang."
    assert t["dishes/option-7"] == "Mentions naengmyeon among the dishes that use gochujang."
    counts = {tier.value: n for tier, n in checklist.count_by_tier().items()}
    assert counts == {AC: 1, V: 7, C: 0}


def test_seven_options_is_still_short_and_eight_is_long() -> None:
    short = compile_items(flexible("f", V, opt(7), 1))
    assert [c.kind.value for c in short.checks].count("list_option") == 7
    # n = 8: ceil(4) = 4, ceil(6) = 6, both above the baseline 1.
    long = compile_items(flexible("f", V, opt(8), 1))
    assert rows(long) == [
        ("f/min-1", "list_threshold", V, False, ()),
        ("f/coverage-4", "coverage_threshold", C, True, ()),
        ("f/coverage-6", "coverage_threshold", C, True, ()),
    ]


def test_long_list_of_nine_gets_default_coverage_thresholds_one_tier_lower() -> None:
    options = [f"dish {c}" for c in "abcdefghi"]
    checklist = compile_items(flexible("dishes", AC, options, 2, name="dishes"))
    # ceil(0.5 * 9) = 5 and ceil(0.75 * 9) = 7, both in (2, 9].
    assert rows(checklist) == [
        ("dishes/min-2", "list_threshold", AC, False, ()),
        ("dishes/coverage-5", "coverage_threshold", V, True, ()),
        ("dishes/coverage-7", "coverage_threshold", V, True, ()),
    ]
    enumerated = "dish a; dish b; dish c; dish d; dish e; dish f; dish g; dish h; dish i."
    t = texts(checklist)
    assert t["dishes/min-2"] == f"Mentions at least 2 of the following dishes: {enumerated}"
    assert t["dishes/coverage-5"] == f"Mentions at least 5 of the following dishes: {enumerated}"
    assert t["dishes/coverage-7"] == f"Mentions at least 7 of the following dishes: {enumerated}"


def test_valuable_long_list_coverage_goes_to_context() -> None:
    checklist = compile_items(flexible("f", V, opt(9), 2))
    assert rows(checklist) == [
        ("f/min-2", "list_threshold", V, False, ()),
        ("f/coverage-5", "coverage_threshold", C, True, ()),
        ("f/coverage-7", "coverage_threshold", C, True, ()),
    ]


@pytest.mark.parametrize(
    ("baseline", "expected_coverage"),
    [
        (4, [5, 7]),  # both defaults above the baseline
        (5, [7]),  # ceil(4.5) = 5 equals the baseline: dropped
        (6, [7]),  # 5 below the baseline: dropped
        (7, []),  # 5 below, 7 at the baseline: both dropped
        (9, []),  # baseline = n: nothing above it
    ],
)
def test_default_coverage_at_or_below_the_baseline_is_dropped(
    baseline: int, expected_coverage: list[int]
) -> None:
    checklist = compile_items(flexible("f", AC, opt(9), baseline))
    assert rows(checklist) == [
        (f"f/min-{baseline}", "list_threshold", AC, False, ()),
        *[(f"f/coverage-{t}", "coverage_threshold", V, True, ()) for t in expected_coverage],
    ]


def test_defaults_that_collapse_give_one_coverage_check() -> None:
    # ceil(0.5 * 9) = 5 and ceil(0.55 * 9) = ceil(4.95) = 5: de-duplicated.
    config = CompileConfig(coverage_fractions=(0.5, 0.55))
    checklist = compile_items(flexible("f", V, opt(9), 2), config=config)
    assert rows(checklist) == [
        ("f/min-2", "list_threshold", V, False, ()),
        ("f/coverage-5", "coverage_threshold", C, True, ()),
    ]


@pytest.mark.parametrize(
    ("fraction", "n", "expected"),
    [
        (0.7, 10, 7),
        (0.28, 25, 7),  # 0.28 * 25 in floats is 7.000000000000001: ceil must still give 7
        (0.56, 25, 14),  # 14.000000000000002 in floats
        (0.3, 10, 3),
        (0.6, 10, 6),
        (0.35, 20, 7),
        (0.1, 30, 3),
        (1.0, 9, 9),
        (0.5, 11, 6),
    ],
)
def test_coverage_fraction_is_exact_decimal_ceiling(fraction: float, n: int, expected: int) -> None:
    config = CompileConfig(coverage_fractions=(fraction,))
    checklist = compile_items(flexible("f", AC, opt(n), 1), config=config)
    assert [c.id for c in checklist.checks] == ["f/min-1", f"f/coverage-{expected}"]
    item = validate_meta_rubric(
        {"id": "q", "question": "Q", "items": [flexible("f", AC, opt(n), 1)]}
    ).items[0]
    assert isinstance(item, FlexibleListItem)
    assert coverage_thresholds(item, config) == [expected]


def test_context_short_list_is_treated_as_long() -> None:
    checklist = compile_items(flexible("f", C, ["a", "b", "c", "d"], 1, name="things"))
    # ceil(0.5 * 4) = 2, ceil(0.75 * 4) = 3; Context has nothing below it.
    assert rows(checklist) == [
        ("f/min-1", "list_threshold", C, False, ()),
        ("f/coverage-2", "coverage_threshold", C, True, ()),
        ("f/coverage-3", "coverage_threshold", C, True, ()),
    ]
    assert (
        texts(checklist)["f/coverage-3"]
        == "Mentions at least 3 of the following things: a; b; c; d."
    )
    assert not any(c.kind.value == "list_option" for c in checklist.checks)


def test_context_list_of_two_keeps_only_the_threshold_above_the_baseline() -> None:
    # ceil(0.5 * 2) = 1 (= baseline, dropped), ceil(0.75 * 2) = 2.
    checklist = compile_items(flexible("f", C, ["a", "b"], 1))
    assert [c.id for c in checklist.checks] == ["f/min-1", "f/coverage-2"]


def test_two_baselines_on_a_long_list() -> None:
    checklist = compile_items(flexible("f", AC, opt(9), [2, 4]))
    assert rows(checklist) == [
        ("f/min-2", "list_threshold", AC, False, ()),
        ("f/min-4", "list_threshold", AC, False, ()),
        ("f/coverage-5", "coverage_threshold", V, True, ()),
        ("f/coverage-7", "coverage_threshold", V, True, ()),
    ]


def test_two_baselines_on_a_short_list_and_the_max_baseline_filters_coverage() -> None:
    short = compile_items(flexible("f", V, opt(5), [1, 3]))
    assert rows(short) == [
        ("f/min-1", "list_threshold", V, False, ()),
        ("f/min-3", "list_threshold", V, False, ()),
        *[(f"f/option-{i}", "list_option", C, True, ()) for i in range(1, 6)],
    ]
    # long: 5 is above the first baseline but not above max(B) = 6, so only 7 remains.
    long = compile_items(flexible("f", V, opt(9), [2, 6]))
    assert [c.id for c in long.checks] == ["f/min-2", "f/min-6", "f/coverage-7"]


def test_explicit_coverage_thresholds_replace_the_defaults() -> None:
    checklist = compile_items(flexible("f", V, opt(10), 2, coverage_thresholds=[3, 4, 10]))
    assert rows(checklist) == [
        ("f/min-2", "list_threshold", V, False, ()),
        ("f/coverage-3", "coverage_threshold", C, True, ()),
        ("f/coverage-4", "coverage_threshold", C, True, ()),
        ("f/coverage-10", "coverage_threshold", C, True, ()),
    ]


def test_explicit_coverage_thresholds_on_a_context_short_list() -> None:
    checklist = compile_items(flexible("f", C, opt(5), 1, coverage_thresholds=[4]))
    assert [c.id for c in checklist.checks] == ["f/min-1", "f/coverage-4"]


def test_explicit_empty_coverage_thresholds_give_no_coverage_checks() -> None:
    checklist = compile_items(flexible("f", AC, opt(9), 2, coverage_thresholds=[]))
    assert [c.id for c in checklist.checks] == ["f/min-2"]


def test_valuable_short_list_options_go_to_context() -> None:
    checklist = compile_items(flexible("p", V, ["beef", "tofu", "squid."], 1, name="proteins"))
    assert rows(checklist) == [
        ("p/min-1", "list_threshold", V, False, ()),
        ("p/option-1", "list_option", C, True, ()),
        ("p/option-2", "list_option", C, True, ()),
        ("p/option-3", "list_option", C, True, ()),
    ]
    t = texts(checklist)
    assert t["p/min-1"] == "Mentions at least 1 of the following proteins: beef; tofu; squid."
    assert t["p/option-3"] == "Mentions squid among the proteins."


def test_flexible_list_citations() -> None:
    options = [
        {"text": "a", "cites": ["s2"]},
        {"text": "b", "cites": ["s4", "s1", "s2"]},
        "c",
        {"text": "d", "cites": ["s3"]},
    ]
    # No item cites: aggregates take the union of the options' cites in order.
    pooled = compile_items(flexible("f", AC, options, 1))
    assert rows(pooled) == [
        ("f/min-1", "list_threshold", AC, False, ("s2", "s4", "s1", "s3")),
        ("f/option-1", "list_option", V, True, ("s2",)),
        ("f/option-2", "list_option", V, True, ("s4", "s1", "s2")),
        ("f/option-3", "list_option", V, True, ()),
        ("f/option-4", "list_option", V, True, ("s3",)),
    ]
    # Item cites win for aggregates and fill in for options without their own.
    cited = compile_items(flexible("f", C, options, 1, cites=["s5"]))
    assert rows(cited) == [
        ("f/min-1", "list_threshold", C, False, ("s5",)),
        ("f/coverage-2", "coverage_threshold", C, True, ("s5",)),
        ("f/coverage-3", "coverage_threshold", C, True, ("s5",)),
    ]
    with_options = compile_items(flexible("f", V, options, 1, cites=["s5"]))
    assert [c.cites for c in with_options.checks] == [
        ("s5",),
        ("s2",),
        ("s4", "s1", "s2"),
        ("s5",),
        ("s3",),
    ]


# --------------------------------------------------------------------------- processes


def test_process_without_optional_steps() -> None:
    checklist = compile_items(process("p", V, ["Boil water.", "Add noodles", "Drain"]))
    assert rows(checklist) == [
        ("p/step-1", "step", V, False, ()),
        ("p/step-2", "step", V, False, ()),
        ("p/step-3", "step", V, False, ()),
        ("p/sequence", "sequence", V, False, ()),
    ]
    t = texts(checklist)
    assert t["p/step-1"] == "Describes this step of how it is made: Boil water."
    assert t["p/sequence"] == (
        "Presents these steps of how it is made in this relative order: "
        "(1) Boil water; (2) Add noodles; (3) Drain."
    )


def test_process_with_one_optional_step() -> None:
    steps = [
        {"text": "a", "cites": ["s3"]},
        {"text": "b", "required": False, "cites": ["s2"]},
        {"text": "c", "required": True, "cites": ["s1", "s3"]},
    ]
    checklist = compile_items(process("p", AC, steps))
    assert rows(checklist) == [
        ("p/step-1", "step", AC, False, ("s3",)),
        ("p/step-2", "step", V, True, ("s2",)),
        ("p/step-3", "step", AC, False, ("s1", "s3")),
        # aggregates without item cites: union of the elements' cites in first-seen order
        ("p/sequence", "sequence", AC, False, ("s3", "s1")),
        ("p/sequence-full", "sequence_full", V, True, ("s3", "s2", "s1")),
    ]
    t = texts(checklist)
    assert t["p/sequence"] == (
        "Presents these steps of how it is made in this relative order: (1) a; (2) c."
    )
    assert t["p/sequence-full"] == (
        "Presents these steps of how it is made in this relative order: (1) a; (2) b; (3) c."
    )


def test_process_with_several_optional_steps_in_context() -> None:
    steps = ["a", {"text": "b", "required": False}, "c", {"text": "d", "required": False}]
    checklist = compile_items(process("p", C, steps, cites=["s4"]))
    assert rows(checklist) == [
        ("p/step-1", "step", C, False, ("s4",)),
        ("p/step-2", "step", C, True, ("s4",)),
        ("p/step-3", "step", C, False, ("s4",)),
        ("p/step-4", "step", C, True, ("s4",)),
        ("p/sequence", "sequence", C, False, ("s4",)),
        ("p/sequence-full", "sequence_full", C, True, ("s4",)),
    ]


def test_process_with_exactly_one_required_step_has_no_sequence_but_a_full_one() -> None:
    steps = [{"text": "a", "required": False}, "b"]
    checklist = compile_items(process("p", V, steps))
    assert rows(checklist) == [
        ("p/step-1", "step", C, True, ()),
        ("p/step-2", "step", V, False, ()),
        ("p/sequence-full", "sequence_full", C, True, ()),
    ]


def test_process_with_all_steps_optional() -> None:
    steps = [{"text": t, "required": False} for t in ("a", "b", "c")]
    checklist = compile_items(process("p", AC, steps))
    assert rows(checklist) == [
        ("p/step-1", "step", V, True, ()),
        ("p/step-2", "step", V, True, ()),
        ("p/step-3", "step", V, True, ()),
        ("p/sequence-full", "sequence_full", V, True, ()),
    ]


# --------------------------------------------------------------------------- relationships


def test_relationship_with_aspects() -> None:
    checklist = compile_items(
        {
            "id": "rel",
            "type": "relationship",
            "tier": "valuable",
            "entity": "gimbap",
            "relation": "a similar rice dish.",
            "aspects": ["it is rolled in seaweed.", {"text": "it is eaten cold", "cites": ["s3"]}],
            "cites": ["s1"],
        }
    )
    assert rows(checklist) == [
        ("rel/entity", "relation_entity", V, False, ("s1",)),
        ("rel/aspect-1", "relation_aspect", V, False, ("s1",)),
        ("rel/aspect-2", "relation_aspect", V, False, ("s3",)),
    ]
    assert texts(checklist) == {
        "rel/entity": "Identifies the related entity gimbap (a similar rice dish).",
        "rel/aspect-1": "About gimbap (a similar rice dish), states that it is rolled in seaweed.",
        "rel/aspect-2": "About gimbap (a similar rice dish), states that it is eaten cold.",
    }


def test_relationship_without_aspects() -> None:
    checklist = compile_items(
        {
            "id": "rel",
            "type": "relationship",
            "tier": "answer_critical",
            "entity": "gimbap",
            "relation": "a similar rice dish",
        }
    )
    assert rows(checklist) == [("rel/entity", "relation_entity", AC, False, ())]


# --------------------------------------------------------------------------- meta-insights


def test_nested_insights_with_and_without_explicit_tier() -> None:
    insights = [
        {"statement": "Notes the pattern."},
        {"statement": "Explains the trend.", "tier": "answer_critical", "cites": ["s3"]},
        {"statement": "Mentions the history.", "tier": "context"},
    ]
    checklist = compile_items(
        {
            "id": "core",
            "type": "strict_list",
            "tier": "valuable",
            "name": "parts",
            "items": ["x", "y"],
            "cites": ["s1"],
            "meta_insights": insights,
        },
        flexible("f", AC, ["a", "b"], 1, meta_insights=[{"statement": "Says so."}]),
        process("p", C, ["a", "b"], meta_insights=[{"statement": "Orders.", "tier": "valuable"}]),
    )
    assert rows(checklist) == [
        ("core/item-1", "list_item", V, False, ("s1",)),
        ("core/item-2", "list_item", V, False, ("s1",)),
        ("core/insight-1", "meta_insight", V, False, ("s1",)),
        ("core/insight-2", "meta_insight", AC, False, ("s3",)),
        ("core/insight-3", "meta_insight", C, False, ("s1",)),
        ("f/min-1", "list_threshold", AC, False, ()),
        ("f/option-1", "list_option", V, True, ()),
        ("f/option-2", "list_option", V, True, ()),
        ("f/insight-1", "meta_insight", AC, False, ()),
        ("p/step-1", "step", C, False, ()),
        ("p/step-2", "step", C, False, ()),
        ("p/sequence", "sequence", C, False, ()),
        ("p/insight-1", "meta_insight", V, False, ()),
    ]
    t = texts(checklist)
    assert t["core/insight-1"] == "Notes the pattern."
    assert t["core/insight-2"] == "Explains the trend."
    assert t["p/insight-1"] == "Orders."


@pytest.mark.parametrize("about", [None, "core"])
def test_standalone_meta_insight(about: str | None) -> None:
    checklist = compile_items(
        {"id": "core", "type": "strict_list", "tier": "context", "name": "n", "items": ["x"]},
        {
            "id": "trend",
            "type": "meta_insight",
            "tier": "answer_critical",
            "statement": "Explains that the dish is a template.",
            "about": about,
            "cites": ["s2"],
        },
    )
    assert rows(checklist) == [
        ("core/item-1", "list_item", C, False, ()),
        ("trend", "meta_insight", AC, False, ("s2",)),
    ]
    assert checklist.checks[1].text == "Explains that the dish is a template."


# --------------------------------------------------------------------------- config and JSON


def test_custom_config_changes_the_outcome_and_is_recorded() -> None:
    item = flexible("f", AC, opt(5), 1)
    default = compile_items(item)
    assert default.config == CompileConfig()
    assert default.config.short_list_max == 7
    assert tuple(default.config.coverage_fractions) == (0.5, 0.75)
    assert [c.id for c in default.checks] == ["f/min-1", *[f"f/option-{i}" for i in range(1, 6)]]

    config = CompileConfig(short_list_max=3, coverage_fractions=(0.6,))
    custom = compile_items(item, config=config)
    # 5 > 3: long; ceil(0.6 * 5) = 3 > 1.
    assert rows(custom) == [
        ("f/min-1", "list_threshold", AC, False, ()),
        ("f/coverage-3", "coverage_threshold", V, True, ()),
    ]
    assert custom.config == config
    assert custom.config.short_list_max == 3
    assert tuple(custom.config.coverage_fractions) == (0.6,)
    # A list within the custom short limit still gets per-option checks.
    small = compile_items(flexible("g", AC, opt(3), 1), config=config)
    assert [c.id for c in small.checks] == ["g/min-1", "g/option-1", "g/option-2", "g/option-3"]


def test_checklist_json_round_trip() -> None:
    config = CompileConfig(short_list_max=3, coverage_fractions=(0.6,))
    checklist = compile_rubric(validate_meta_rubric(SPEC_EXAMPLE), config)
    dumped = checklist.model_dump(mode="json")
    assert set(dumped) == {"rubric_id", "config", "checks"}
    assert dumped["rubric_id"] == "q-0001"
    assert dumped["config"] == {"short_list_max": 3, "coverage_fractions": [0.6]}
    for check in dumped["checks"]:
        assert set(check) == {
            "id", "kind", "tier", "text", "item", "secondary", "cites",
            "target", "options", "at_least",
        }  # fmt: skip
    assert dumped["checks"][0] == {
        "id": "identity",
        "kind": "fact",
        "tier": "answer_critical",
        "text": "Identifies the dish as bibimbap.",
        "item": "identity",
        "secondary": False,
        "cites": ["s1"],
        "target": "Identifies the dish as bibimbap.",
        "options": [],
        "at_least": None,
    }
    # 5 proteins > 3: long, ceil(0.6 * 5) = 3 > 2, at Context.
    assert {
        "id": "proteins/coverage-3",
        "kind": "coverage_threshold",
        "tier": "context",
        "text": "Mentions at least 3 of the following common protein toppings: "
        "beef; fried egg; tofu; chicken; squid.",
        "item": "proteins",
        "secondary": True,
        "cites": [],
        "target": "common protein toppings",
        "options": ["beef", "fried egg", "tofu", "chicken", "squid"],
        "at_least": 3,
    } in dumped["checks"]
    restored = Checklist.model_validate(json.loads(json.dumps(dumped)))
    assert restored == checklist
    assert Checklist.model_validate_json(checklist.model_dump_json()) == checklist


def test_compiling_is_deterministic() -> None:
    meta = validate_meta_rubric(SPEC_EXAMPLE)
    assert compile_rubric(meta) == compile_rubric(meta)
    assert (
        compile_rubric(meta).model_dump_json()
        == compile_rubric(
            validate_meta_rubric(json.loads(json.dumps(SPEC_EXAMPLE)))
        ).model_dump_json()
    )


def test_checklist_rejects_duplicate_check_ids() -> None:
    check = Check(id="a", kind="fact", tier="valuable", text="t", item="a")
    with pytest.raises(ValueError, match="duplicate check id"):
        Checklist(rubric_id="q", checks=(check, check))
