"""The fixed rules that turn a meta-rubric into a flat binary checklist (docs/method.md [C1]-[C15]).

Checks fall into two groups: the genuine requirement keeps its item's tier; secondary
checks (optional elements, higher coverage, optional steps, the full ordering) drop one
tier, and Context has no tier beneath it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

from gamut_eval.rubric._checklist import CheckKind, Checklist, CompileConfig
from gamut_eval.rubric._model import (
    FactItem,
    FlexibleListItem,
    Item,
    MetaInsightItem,
    MetaRubric,
    NestedInsight,
    ProcessItem,
    RelationshipItem,
    StrictListItem,
    Tier,
)

__all__ = ["compile_rubric", "coverage_thresholds"]


def compile_rubric(meta: MetaRubric, config: CompileConfig | None = None) -> Checklist:
    """Compile ``meta`` into its checklist; deterministic for a given rubric and config."""
    config = config or CompileConfig()
    checks: list[dict[str, Any]] = []
    for item in meta.items:
        checks.extend(_compile_item(item, config))
    # One validation call for the whole checklist runs in pydantic-core, several times
    # faster than building each Check in Python; compiling is on the hot path of a build.
    return Checklist.model_validate({"rubric_id": meta.id, "config": config, "checks": checks})


def coverage_thresholds(item: FlexibleListItem, config: CompileConfig) -> list[int]:
    """The higher coverage thresholds of a long (or Context) flexible list.

    Explicit ``coverage_thresholds`` win; else ``ceil(f * n)`` per configured fraction,
    de-duplicated, keeping values above the highest baseline and at most ``n``. Fractions
    are taken as exact decimals so ``0.7 * 10`` is 7, not 8.
    """
    n = len(item.options)
    if item.coverage_thresholds is not None:
        return list(item.coverage_thresholds)
    top = max(item.min_required)
    return [v for v in _default_thresholds(config.coverage_fractions, n) if top < v <= n]


@lru_cache(maxsize=1024)
def _default_thresholds(fractions: tuple[float, ...], n: int) -> tuple[int, ...]:
    return tuple(sorted({math.ceil(Fraction(str(f)) * n) for f in fractions}))


def _compile_item(item: Item, config: CompileConfig) -> list[dict[str, Any]]:
    if isinstance(item, FactItem | MetaInsightItem):
        kind = CheckKind.FACT if isinstance(item, FactItem) else CheckKind.META_INSIGHT
        return [_check(item.id, kind, item.tier, item.statement, item, cites=item.cites)]
    if isinstance(item, StrictListItem):
        return _strict_list(item) + _insights(item)
    if isinstance(item, FlexibleListItem):
        return _flexible_list(item, config) + _insights(item)
    if isinstance(item, ProcessItem):
        return _process(item) + _insights(item)
    return _relationship(item)


def _check(
    check_id: str,
    kind: CheckKind,
    tier: Tier,
    text: str,
    item: Item,
    *,
    cites: Sequence[str] = (),
    secondary: bool = False,
) -> dict[str, Any]:
    return {
        "id": check_id,
        "kind": kind,
        "tier": tier,
        "text": text,
        "item": item.id,
        "secondary": secondary,
        "cites": tuple(cites or item.cites),
    }


def _clause(text: str) -> str:
    """Element text without surrounding space or one final full stop, to embed in a sentence."""
    text = text.strip()
    return text[:-1].rstrip() if text.endswith(".") and not text.endswith("..") else text


def _joined(texts: Iterable[str]) -> str:
    return "; ".join(_clause(t) for t in texts)


def _union_cites(groups: Iterable[Sequence[str]]) -> list[str]:
    """Cites of several elements, in first-seen order, for checks that span them."""
    seen: list[str] = []
    for group in groups:
        seen.extend(cite for cite in group if cite not in seen)
    return seen


def _strict_list(item: StrictListItem) -> list[dict[str, Any]]:
    name = _clause(item.name)
    return [
        _check(
            f"{item.id}/item-{i}",
            CheckKind.LIST_ITEM,
            item.tier,
            f"Mentions {_clause(element.text)} as one of the {name}.",
            item,
            cites=element.cites,
        )
        for i, element in enumerate(item.items, start=1)
    ]


def _threshold_template(item: FlexibleListItem) -> str:
    """The threshold text with ``{b}`` left open: options are joined once per list."""
    options = _joined(o.text for o in item.options).replace("{", "{{").replace("}", "}}")
    name = _clause(item.name).replace("{", "{{").replace("}", "}}")
    return f"Mentions at least {{b}} of the following {name}: {options}."


def _flexible_list(item: FlexibleListItem, config: CompileConfig) -> list[dict[str, Any]]:
    pooled = item.cites or tuple(_union_cites(o.cites for o in item.options))
    template = _threshold_template(item)
    checks = [
        _check(
            f"{item.id}/min-{b}",
            CheckKind.LIST_THRESHOLD,
            item.tier,
            template.format(b=b),
            item,
            cites=pooled,
        )
        for b in item.min_required
    ]
    lower = item.tier.lower()
    short = len(item.options) <= config.short_list_max and item.tier is not Tier.CONTEXT
    if short:
        name = _clause(item.name)
        checks += [
            _check(
                f"{item.id}/option-{i}",
                CheckKind.LIST_OPTION,
                lower,
                f"Mentions {_clause(option.text)} among the {name}.",
                item,
                cites=option.cites,
                secondary=True,
            )
            for i, option in enumerate(item.options, start=1)
        ]
    else:
        checks += [
            _check(
                f"{item.id}/coverage-{t}",
                CheckKind.COVERAGE_THRESHOLD,
                lower,
                template.format(b=t),
                item,
                cites=pooled,
                secondary=True,
            )
            for t in coverage_thresholds(item, config)
        ]
    return checks


def _sequence_text(name: str, steps: Sequence[str]) -> str:
    ordered = "; ".join(f"({i}) {_clause(s)}" for i, s in enumerate(steps, start=1))
    return f"Presents these steps of {_clause(name)} in this relative order: {ordered}."


def _process(item: ProcessItem) -> list[dict[str, Any]]:
    lower = item.tier.lower()
    name = _clause(item.name)
    checks = [
        _check(
            f"{item.id}/step-{i}",
            CheckKind.STEP,
            item.tier if step.required else lower,
            f"Describes this step of {name}: {_clause(step.text)}.",
            item,
            cites=step.cites,
            secondary=not step.required,
        )
        for i, step in enumerate(item.steps, start=1)
    ]
    required = [s for s in item.steps if s.required]
    if len(required) >= 2:
        checks.append(
            _check(
                f"{item.id}/sequence",
                CheckKind.SEQUENCE,
                item.tier,
                _sequence_text(item.name, [s.text for s in required]),
                item,
                cites=item.cites or _union_cites(s.cites for s in required),
            )
        )
    if len(required) < len(item.steps):
        checks.append(
            _check(
                f"{item.id}/sequence-full",
                CheckKind.SEQUENCE_FULL,
                lower,
                _sequence_text(item.name, [s.text for s in item.steps]),
                item,
                cites=item.cites or _union_cites(s.cites for s in item.steps),
                secondary=True,
            )
        )
    return checks


def _relationship(item: RelationshipItem) -> list[dict[str, Any]]:
    entity, relation = _clause(item.entity), _clause(item.relation)
    checks = [
        _check(
            f"{item.id}/entity",
            CheckKind.RELATION_ENTITY,
            item.tier,
            f"Identifies the related entity {entity} ({relation}).",
            item,
        )
    ]
    checks += [
        _check(
            f"{item.id}/aspect-{i}",
            CheckKind.RELATION_ASPECT,
            item.tier,
            f"About {entity} ({relation}), states that {_clause(aspect.text)}.",
            item,
            cites=aspect.cites,
        )
        for i, aspect in enumerate(item.aspects, start=1)
    ]
    return checks


def _insights(item: StrictListItem | FlexibleListItem | ProcessItem) -> list[dict[str, Any]]:
    return [_insight(item, i, insight) for i, insight in enumerate(item.meta_insights, start=1)]


def _insight(item: Item, i: int, insight: NestedInsight) -> dict[str, Any]:
    return _check(
        f"{item.id}/insight-{i}",
        CheckKind.META_INSIGHT,
        insight.tier or item.tier,
        insight.statement,
        item,
        cites=insight.cites,
    )
