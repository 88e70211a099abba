"""Make a new meta-rubric a superset of an old one again: restore what it lost (pure).

``restore_superset(old, new)`` keeps everything ``new`` added and puts back everything it
removed or changed (``_superset.py`` defines what that is): dropped items, elements and
nested meta-insights come back in their old positions (added elements follow the old
ones), tiers, thresholds, ``required`` flags and wording revert, and citations are the old
ones followed by the new. The caller may let some go: whole items (``drop_items``) and
citations of given evidence ids (``drop_cites``, with those evidence entries).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from gamut_eval.rubric._model import MetaRubric
from gamut_eval.rubric._superset import ELEMENT_FIELDS, match_elements


def _cites(old: Sequence[str], new: Sequence[str], drop: Collection[str]) -> list[str]:
    return [c for c in old if c not in drop] + [c for c in new if c not in old and c not in drop]


def _stripped(node: dict[str, Any], drop: Collection[str]) -> dict[str, Any]:
    """An old item or element as it was, without the citations that may go."""
    out = dict(node)
    if "cites" in out:
        out["cites"] = [c for c in out["cites"] if c not in drop]
    for key in ELEMENT_FIELDS:
        if key in out:
            out[key] = [_stripped(e, drop) for e in out[key]]
    return out


def _merged(old: dict[str, Any], new: dict[str, Any], drop: Collection[str]) -> dict[str, Any]:
    """``old`` with what ``new`` added: extra citations, elements after the old ones."""
    out = {**new, **{k: v for k, v in old.items() if k not in ("cites", *ELEMENT_FIELDS)}}
    if "cites" in old or "cites" in new:
        out["cites"] = _cites(old.get("cites", ()), new.get("cites", ()), drop)
    for key in ELEMENT_FIELDS:
        if key in old or key in new:
            out[key] = _merged_elements(old.get(key, []), new.get(key, []), drop)
    return out


def _merged_elements(
    old: list[dict[str, Any]], new: list[dict[str, Any]], drop: Collection[str]
) -> list[dict[str, Any]]:
    pairs = match_elements(old, new)
    kept = [
        _merged(o, new[pairs[i]], drop) if i in pairs else _stripped(o, drop)
        for i, o in enumerate(old)
    ]
    matched = set(pairs.values())
    return kept + [_stripped(n, drop) for j, n in enumerate(new) if j not in matched]


def restore_superset(
    old: MetaRubric,
    new: MetaRubric,
    *,
    drop_items: Collection[str] = (),
    drop_cites: Collection[str] = (),
) -> MetaRubric:
    """``new`` made a superset of ``old`` (see the module docstring); raises the project's
    ``ValidationError`` if the result breaks a rule (say, a restored item's only citation
    was let go)."""
    new_items = {item.id: item.model_dump(mode="json") for item in new.items}
    merged: dict[str, dict[str, Any]] = {}
    for item in old.items:
        if item.id in drop_items:
            continue
        before, after = item.model_dump(mode="json"), new_items.get(item.id)
        if after is None or after["type"] != before["type"]:
            merged[item.id] = _stripped(before, drop_cites)
        else:
            merged[item.id] = _merged(before, after, drop_cites)
    order = [i.id for i in new.items]
    for index, item in enumerate(old.items):  # a restored item goes back after its old neighbour
        if item.id in merged and item.id not in order:
            earlier = [o.id for o in old.items[:index] if o.id in order]
            order.insert(order.index(earlier[-1]) + 1 if earlier else 0, item.id)
    items = [merged.get(i, new_items.get(i)) for i in order]
    new_evidence = [e for e in new.evidence if e.id not in {o.id for o in old.evidence}]
    evidence = [e for e in old.evidence if e.id not in drop_cites] + new_evidence
    document = {
        **new.model_dump(mode="json", exclude={"items", "evidence"}),
        "question": old.question,
        "entity": old.entity,
        "evidence": [e.model_dump(mode="json") for e in evidence],
        "items": items,
    }
    return MetaRubric.model_validate(document)
