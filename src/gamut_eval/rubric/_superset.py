"""Is one meta-rubric a superset of another? Every difference, with its path (pure).

A refinement of a meta-rubric (an LLM pass, a human round) may only add: every item of the
old rubric, every element of its lists, steps and aspects (in its position: check ids such
as ``vegetables/option-3`` are positions), every step's ``required`` flag, every nested
meta-insight, every citation, tier and threshold must stand unchanged in the new one.
``diff_meta_rubrics`` lists every difference, additions included; ``superset_problems``
keeps those that break the rule. Elements are matched by their text (exactly, else ignoring
case, spacing and a final full stop, else a similar unmatched element in the same position,
which counts as reworded); items by id. ``gamut build diff``, the refinement stage and the
annotation app (to show what people changed) all use it.

``restore_superset(old, new)`` makes a new meta-rubric a superset of an old one again: it
keeps everything ``new`` added and puts back everything it removed or changed: dropped
items, elements and nested meta-insights come back in their old positions (added elements
follow the old ones), tiers, thresholds, ``required`` flags and wording revert, and
citations are the old ones followed by the new. The caller may let some go: whole items
(``drop_items``) and citations of given evidence ids (``drop_cites``, with those evidence
entries).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any, Literal

from pydantic import BaseModel

from gamut_eval.rubric._model import FROZEN, MetaRubric

ChangeKind = Literal["removed", "changed", "moved", "reworded", "added"]

WORDING_FIELDS = frozenset({"statement", "name", "relation", "text"})
"""Fields whose change is a rewording (accepted only when asked for)."""
ELEMENT_FIELDS = ("items", "options", "steps", "aspects", "meta_insights")
"""Fields holding elements, compared element by element."""
_SKIPPED = frozenset({"id", "type", "cites"})
_WORD = re.compile(r"\w+")


class RubricChange(BaseModel):
    """One difference between an old and a new meta-rubric."""

    model_config = FROZEN

    question: str
    """The rubric's id (the question id of its dataset record)."""
    path: str
    """Where: ``ITEM``, ``ITEM.FIELD``, ``ITEM.options[3]`` (1-based, as check ids count),
    ``ITEM.steps[2].required``, ``ITEM.cites[s4]``, ``evidence[s4]``, ``question``..."""
    kind: ChangeKind
    """``removed``; ``changed`` (a tier, threshold, flag, type...); ``moved`` (an element at
    another position); ``reworded`` (only the wording differs); ``added``."""
    before: Any = None
    """The old value (absent for ``added``)."""
    after: Any = None
    """The new value (absent for ``removed``)."""

    @property
    def item(self) -> str | None:
        """The item id the path starts with (None for the rubric's own fields)."""
        head = re.split(r"[.\[]", self.path, maxsplit=1)[0]
        return None if head in ("evidence", "question", "entity", "") else head

    def line(self) -> str:
        """One line for people: ``QUESTION PATH: KIND BEFORE -> AFTER``."""
        where = f"{self.question} {self.path}" if self.path else self.question
        if self.kind == "added":
            return f"{where}: added {_shown(self.after)}"
        if self.kind == "removed":
            return f"{where}: removed {_shown(self.before)}"
        return f"{where}: {self.kind} {_shown(self.before)} -> {_shown(self.after)}"


def _shown(value: Any, limit: int = 120) -> str:
    if isinstance(value, dict):
        value = value.get("text") or value.get("statement") or value.get("id") or value
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def element_key(text: str) -> str:
    """An element compared ignoring case, spacing and one final full stop."""
    return " ".join(text.casefold().split()).removesuffix(".").strip()


def _text(element: Mapping[str, Any]) -> str:
    return str(element.get("text", element.get("statement", "")))


def match_elements(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> dict[int, int]:
    """Old index -> new index: the same text, else the same ``element_key``, else an
    unmatched new element in the same position (a rewording)."""
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for same in (lambda a, b: a == b, lambda a, b: element_key(a) == element_key(b)):
        for i, o in enumerate(old):
            if i in pairs:
                continue
            for j, n in enumerate(new):
                if j not in taken and same(_text(o), _text(n)):
                    pairs[i] = j
                    taken.add(j)
                    break
    for i in range(len(old)):
        if i not in pairs and i < len(new) and i not in taken and _similar(old[i], new[i]):
            pairs[i] = i
            taken.add(i)
    return pairs


def _similar(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a new text plausibly rewords an old one: half the words of the shorter occur
    in the other, or their characters match at 60% (``difflib``); "carrot" -> "carrots" is
    a rewording, "spinach" -> "kimchi" a replacement."""
    x, y = _text(old).casefold(), _text(new).casefold()
    a, b = set(_WORD.findall(x)), set(_WORD.findall(y))
    shared = bool(a and b) and len(a & b) * 2 >= min(len(a), len(b))
    return shared or SequenceMatcher(None, x, y).ratio() >= 0.6


class _Diff:
    def __init__(self, question: str) -> None:
        self.question = question
        self.changes: list[RubricChange] = []

    def add(self, path: str, kind: ChangeKind, before: Any = None, after: Any = None) -> None:
        self.changes.append(
            RubricChange(question=self.question, path=path, kind=kind, before=before, after=after)
        )

    def cites(self, path: str, old: Sequence[str], new: Sequence[str]) -> None:
        for c in old:
            if c not in new:
                self.add(f"{path}.cites[{c}]", "removed", before=c)
        for c in new:
            if c not in old:
                self.add(f"{path}.cites[{c}]", "added", after=c)

    def fields(self, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Every field of one item or element (both of the same type)."""
        for key in sorted(old.keys() | new.keys(), key=_field_order):
            before, after = old.get(key), new.get(key)
            if key == "cites":
                self.cites(path, before or (), after or ())
            elif key in ELEMENT_FIELDS:
                self.elements(f"{path}.{key}", before or [], after or [])
            elif key not in _SKIPPED and before != after:
                kind: ChangeKind = "reworded" if key in WORDING_FIELDS else "changed"
                self.add(f"{path}.{key}", kind, before, after)

    def elements(self, path: str, old: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
        pairs = match_elements(old, new)
        for i, o in enumerate(old):
            where = f"{path}[{i + 1}]"
            if i not in pairs:
                self.add(where, "removed", before=o)
                continue
            j = pairs[i]
            if j != i:
                self.add(where, "moved", before=i + 1, after=j + 1)
            self.fields(where, o, new[j])
        matched = set(pairs.values())
        for j, n in enumerate(new):
            if j not in matched:
                self.add(f"{path}[{j + 1}]", "added", after=n)


def _field_order(key: str) -> tuple[int, str]:
    order = ("tier", "statement", "name", "text", "entity", "relation", "required")
    return (order.index(key), key) if key in order else (len(order), key)


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")


def diff_meta_rubrics(old: MetaRubric, new: MetaRubric) -> list[RubricChange]:
    """Every difference from ``old`` to ``new`` (additions included), in ``old``'s order."""
    diff = _Diff(old.id)
    for key in ("question", "entity"):
        if getattr(old, key) != getattr(new, key):
            kind: ChangeKind = "reworded" if key == "question" else "changed"
            diff.add(key, kind, getattr(old, key), getattr(new, key))
    new_evidence = {e.id: _dump(e) for e in new.evidence}
    for evidence in old.evidence:
        found = new_evidence.pop(evidence.id, None)
        if found is None:
            diff.add(f"evidence[{evidence.id}]", "removed", before=evidence.text)
        elif found != _dump(evidence):
            diff.add(f"evidence[{evidence.id}]", "changed", _dump(evidence), found)
    for evidence_id, found in new_evidence.items():
        diff.add(f"evidence[{evidence_id}]", "added", after=found["text"])
    new_items = {item.id: _dump(item) for item in new.items}
    for item in old.items:
        before, after = _dump(item), new_items.pop(item.id, None)
        if after is None:
            diff.add(item.id, "removed", before=_summary(before))
        elif after["type"] != before["type"]:
            diff.add(f"{item.id}.type", "changed", before["type"], after["type"])
        else:
            diff.fields(item.id, before, after)
    for item_id, after in new_items.items():
        diff.add(item_id, "added", after=_summary(after))
    return diff.changes


def _summary(item: Mapping[str, Any]) -> str:
    label = item.get("statement") or item.get("name") or item.get("entity") or ""
    return f"[{item['type']}, {item['tier']}] {label}"


def diff_rubric_sets(
    old: Mapping[str, MetaRubric], new: Mapping[str, MetaRubric]
) -> list[RubricChange]:
    """Rubrics matched by question id: every difference, a missing question as removed."""
    changes: list[RubricChange] = []
    for qid, rubric in old.items():
        if qid in new:
            changes += diff_meta_rubrics(rubric, new[qid])
        else:
            whole = f"the rubric ({len(rubric.items)} items)"
            changes.append(RubricChange(question=qid, path="", kind="removed", before=whole))
    changes += [
        RubricChange(
            question=qid, path="", kind="added", after=f"the rubric ({len(r.items)} items)"
        )
        for qid, r in new.items()
        if qid not in old
    ]
    return changes


def superset_problems(
    changes: Sequence[RubricChange], *, allow_rewording: bool = False
) -> list[RubricChange]:
    """The changes that keep the new rubric from being a superset of the old one."""
    allowed: set[str] = {"added", "reworded"} if allow_rewording else {"added"}
    return [c for c in changes if c.kind not in allowed]


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
