"""Property tests of the compiler (docs/method.md [C1]-[C14]) on random valid meta-rubrics."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from gamut_eval.rubric import (
    Checklist,
    CompileConfig,
    MetaRubric,
    compile_rubric,
    validate_meta_rubric,
)

TIERS = ("answer_critical", "valuable", "context")
RANK = {"answer_critical": 0, "valuable": 1, "context": 2}
LOWER = {"answer_critical": "valuable", "valuable": "context", "context": "context"}
CONTAINERS = ("strict_list", "flexible_list", "process")
ITEM_TYPES = ("fact", "strict_list", "flexible_list", "process", "relationship", "meta_insight")
FRACTIONS = (0.1, 0.25, 0.3, 0.5, 0.55, 0.6, 0.7, 0.75, 0.9, 1.0)

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

VOCAB = ("rice", "Beef", "fried egg", "tofu", " squid", "gochujang ", "stone  bowl", "x")
words = st.sampled_from(VOCAB)
tiers = st.sampled_from(TIERS)


@st.composite
def cites(draw: st.DrawFn, evidence: list[str]) -> list[str]:
    if not evidence:
        return []
    return draw(st.lists(st.sampled_from(evidence), unique=True, max_size=2))


@st.composite
def elements(draw: st.DrawFn, evidence: list[str], lo: int, hi: int) -> list[Any]:
    """Element texts made unique (ignoring case and whitespace) by an index prefix."""
    n = draw(st.integers(lo, hi))
    out: list[Any] = []
    for i in range(n):
        text = f"e{i} {draw(words)}" + draw(st.sampled_from(["", "."]))
        if draw(st.booleans()):
            out.append(text)
        else:
            out.append({"text": text, "cites": draw(cites(evidence))})
    return out


@st.composite
def nested_insights(draw: st.DrawFn, evidence: list[str]) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        insight: dict[str, Any] = {"statement": f"Insight {draw(words)}."}
        if draw(st.booleans()):
            insight["tier"] = draw(tiers)
        if draw(st.booleans()):
            insight["cites"] = draw(cites(evidence))
        out.append(insight)
    return out


@st.composite
def baselines_and_coverage(draw: st.DrawFn, n: int) -> dict[str, Any]:
    if n >= 2 and draw(st.booleans()):
        b1 = draw(st.integers(1, n - 1))
        b2 = draw(st.integers(b1 + 1, n))
        baselines: list[int] = [b1, b2]
        min_required: Any = baselines
    else:
        b = draw(st.integers(1, n))
        baselines = [b]
        min_required = draw(st.sampled_from([b, [b]]))
    out: dict[str, Any] = {"min_required": min_required}
    if draw(st.integers(0, 3)) == 0:
        pool = list(range(max(baselines) + 1, n + 1))
        out["coverage_thresholds"] = sorted(
            draw(st.lists(st.sampled_from(pool), unique=True, max_size=3)) if pool else []
        )
    return out


@st.composite
def item(draw: st.DrawFn, index: int, kind: str, evidence: list[str]) -> dict[str, Any]:
    base: dict[str, Any] = {"id": f"i{index}", "type": kind, "tier": draw(tiers)}
    if draw(st.booleans()):
        base["cites"] = draw(cites(evidence))
    if kind in ("fact", "meta_insight"):
        base["statement"] = f"States {draw(words)}."
    elif kind == "relationship":
        base |= {
            "entity": draw(words),
            "relation": draw(words),
            "aspects": draw(elements(evidence, 0, 3)),
        }
    else:
        base["name"] = draw(words)
        base["meta_insights"] = draw(nested_insights(evidence))
        if kind == "strict_list":
            base["items"] = draw(elements(evidence, 1, 5))
        elif kind == "flexible_list":
            options = draw(elements(evidence, 2, 12))
            base["options"] = options
            base |= draw(baselines_and_coverage(len(options)))
        else:
            steps = draw(elements(evidence, 2, 6))
            base["steps"] = [
                s
                if isinstance(s, str) and draw(st.booleans())
                else {
                    "text": s if isinstance(s, str) else s["text"],
                    "required": draw(st.booleans()),
                    **({} if isinstance(s, str) else {"cites": s["cites"]}),
                }
                for s in steps
            ]
    return base


@st.composite
def meta_rubric_docs(draw: st.DrawFn) -> dict[str, Any]:
    evidence = [f"s{i}" for i in range(1, draw(st.integers(0, 3)) + 1)]
    kinds = draw(st.lists(st.sampled_from(ITEM_TYPES), min_size=1, max_size=8))
    items = [draw(item(i, kind, evidence)) for i, kind in enumerate(kinds)]
    containers = [it["id"] for it in items if it["type"] in CONTAINERS]
    for it in items:
        if it["type"] != "meta_insight" or not containers:
            continue
        if draw(st.booleans()):
            it["about"] = draw(st.sampled_from(containers))
    return {
        "id": f"q-{draw(st.integers(0, 999))}",
        "question": "What is this?",
        "evidence": [{"id": e, "text": f"snippet {e}"} for e in evidence],
        "items": items,
    }


meta_rubrics = meta_rubric_docs().map(validate_meta_rubric)
configs = st.one_of(
    st.just(CompileConfig()),
    st.builds(
        CompileConfig,
        short_list_max=st.integers(1, 10),
        coverage_fractions=st.lists(st.sampled_from(FRACTIONS), min_size=1, max_size=3).map(tuple),
    ),
)


def expected_coverage(
    options: int, baselines: list[int], explicit: Any, config: CompileConfig
) -> list[int]:
    if explicit is not None:
        return list(explicit)
    top = max(baselines)
    values = {math.ceil(Fraction(str(f)) * options) for f in config.coverage_fractions}
    return sorted(v for v in values if top < v <= options)


def is_short(item: Any, config: CompileConfig) -> bool:
    return len(item.options) <= config.short_list_max and item.tier.value != "context"


def checks_of(checklist: Checklist, item_id: str) -> list[Any]:
    return [c for c in checklist.checks if c.item == item_id]


@SETTINGS
@given(meta_rubric_docs())
def test_generated_documents_are_valid_and_survive_a_json_round_trip(data: dict[str, Any]) -> None:
    meta = validate_meta_rubric(data)
    again = validate_meta_rubric(json.loads(json.dumps(meta.model_dump(mode="json"))))
    assert again == meta


@SETTINGS
@given(meta_rubrics, configs)
def test_compiling_is_deterministic(meta: MetaRubric, config: CompileConfig) -> None:
    first = compile_rubric(meta, config)
    second = compile_rubric(meta, config)
    assert first == second
    assert first.model_dump_json() == second.model_dump_json()
    reloaded = validate_meta_rubric(json.loads(meta.model_dump_json()))
    assert compile_rubric(reloaded, config) == first
    assert first.config == config
    assert first.rubric_id == meta.id
    assert Checklist.model_validate_json(first.model_dump_json()) == first


@SETTINGS
@given(meta_rubrics, configs)
def test_check_ids_are_unique_and_readable(meta: MetaRubric, config: CompileConfig) -> None:
    checklist = compile_rubric(meta, config)
    ids = [c.id for c in checklist.checks]
    assert len(ids) == len(set(ids))
    item_ids = {it.id for it in meta.items}
    pattern = re.compile(
        r"^(?P<item>[A-Za-z0-9_-]+)(/(item|option|step|aspect|insight|min|coverage)-[1-9]\d*"
        r"|/sequence|/sequence-full|/entity)?$"
    )
    for check in checklist.checks:
        match = pattern.match(check.id)
        assert match, check.id
        assert match["item"] == check.item
        assert check.item in item_ids
    # Checks follow the rubric's item order.
    order = [it.id for it in meta.items]
    positions = [order.index(c.item) for c in checklist.checks]
    assert positions == sorted(positions)


@SETTINGS
@given(meta_rubrics, configs)
def test_tiers_of_primary_and_secondary_checks(meta: MetaRubric, config: CompileConfig) -> None:
    checklist = compile_rubric(meta, config)
    tiers_by_item = {it.id: it.tier.value for it in meta.items}
    items: dict[str, Any] = {it.id: it for it in meta.items}
    nested = {
        f"{it.id}/insight-{j}": (ins.tier or it.tier).value
        for it in meta.items
        for j, ins in enumerate(getattr(it, "meta_insights", ()), start=1)
    }
    for check in checklist.checks:
        own = tiers_by_item[check.item]
        tier = check.tier.value
        if check.secondary:
            assert RANK[tier] >= RANK[own], "a secondary check above its item"
            assert tier == LOWER[own]
            assert check.kind.value in (
                "list_option",
                "coverage_threshold",
                "step",
                "sequence_full",
            )
        elif check.id in nested:
            assert tier == nested[check.id]
        else:
            assert tier == own
        if check.kind.value in ("list_option", "coverage_threshold", "sequence_full"):
            assert check.secondary
        if check.kind.value == "step":
            step = int(check.id.rsplit("-", 1)[1])
            assert check.secondary is not items[check.item].steps[step - 1].required


@SETTINGS
@given(meta_rubrics, configs)
def test_thresholds_never_exceed_the_pool(meta: MetaRubric, config: CompileConfig) -> None:
    checklist = compile_rubric(meta, config)
    for it in meta.items:
        if it.type != "flexible_list":
            continue
        n = len(it.options)
        clauses = [o.text.strip().rstrip(".").strip() for o in it.options]
        for check in checks_of(checklist, it.id):
            if check.kind.value not in ("list_threshold", "coverage_threshold"):
                continue
            from_id = int(check.id.rsplit("-", 1)[1])
            from_text = re.match(r"Mentions at least (\d+) of the following ", check.text)
            assert from_text, check.text
            assert int(from_text[1]) == from_id
            assert 1 <= from_id <= n
            if check.kind.value == "coverage_threshold":
                assert from_id > max(it.min_required)
            # Every threshold check is self-contained: it enumerates all n options.
            enumerated = check.text.split(": ", 1)[1].removesuffix(".")
            assert enumerated.split("; ") == clauses


@SETTINGS
@given(meta_rubrics, configs)
def test_each_option_of_a_short_list_gets_exactly_one_option_check(
    meta: MetaRubric, config: CompileConfig
) -> None:
    checklist = compile_rubric(meta, config)
    for it in meta.items:
        if it.type != "flexible_list":
            continue
        options = [c for c in checks_of(checklist, it.id) if c.kind.value == "list_option"]
        if is_short(it, config):
            assert [c.id for c in options] == [
                f"{it.id}/option-{i}" for i in range(1, len(it.options) + 1)
            ]
            for option, check in zip(it.options, options, strict=True):
                assert option.text.strip().rstrip(".").strip() in check.text
                assert check.cites == (option.cites or it.cites)
        else:
            assert options == []


def expected_count(it: Any, config: CompileConfig) -> int:
    insights = len(getattr(it, "meta_insights", ()))
    if it.type in ("fact", "meta_insight"):
        return 1
    if it.type == "strict_list":
        return len(it.items) + insights
    if it.type == "relationship":
        return 1 + len(it.aspects)
    if it.type == "flexible_list":
        n = len(it.options)
        if is_short(it, config):
            secondary = n
        else:
            secondary = len(
                expected_coverage(n, list(it.min_required), it.coverage_thresholds, config)
            )
        return len(it.min_required) + secondary + insights
    required: int = sum(s.required for s in it.steps)
    optional = len(it.steps) - required
    return len(it.steps) + int(required >= 2) + int(optional >= 1) + insights


@SETTINGS
@given(meta_rubrics, configs)
def test_check_count_per_item_type(meta: MetaRubric, config: CompileConfig) -> None:
    checklist = compile_rubric(meta, config)
    for it in meta.items:
        assert len(checks_of(checklist, it.id)) == expected_count(it, config), it.type
    assert len(checklist.checks) == sum(expected_count(it, config) for it in meta.items)


@SETTINGS
@given(meta_rubrics, configs)
def test_cites_come_from_the_evidence_and_fall_back_to_the_item(
    meta: MetaRubric, config: CompileConfig
) -> None:
    checklist = compile_rubric(meta, config)
    known = {e.id for e in meta.evidence}
    items = {it.id: it for it in meta.items}
    for check in checklist.checks:
        assert set(check.cites) <= known
        it = items[check.item]
        if it.cites:
            # Element cites replace the item's; with none of its own a check has the item's.
            aggregate = ("list_threshold", "coverage_threshold", "sequence", "sequence_full")
            if check.kind.value in ("fact", "relation_entity", *aggregate):
                assert check.cites == it.cites
        elif check.kind.value in ("fact", "relation_entity"):
            assert check.cites == ()
