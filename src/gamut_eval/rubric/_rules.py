"""The meta-rubric rules that span fields (docs/method.md [R7]-[R9]).

Each function returns every problem it finds as an ``ErrorDetail`` with the JSON path
inside the document, so a file's errors are all reported at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gamut_eval.errors import ErrorDetail
from gamut_eval.rubric._items import (
    FlexibleListItem,
    Item,
    MetaInsightItem,
    ProcessItem,
    StrictListItem,
    item_elements,
)

_CONTAINERS = (StrictListItem, FlexibleListItem, ProcessItem)


def rule_errors(
    evidence: Iterable[tuple[int, str]],
    items: Iterable[tuple[int, Item]],
    item_ids: Iterable[tuple[int, str, object]] | None = None,
) -> list[ErrorDetail]:
    """Problems with ids, references, thresholds and duplicates.

    ``evidence`` is ``(index, id)`` per snippet and ``items`` ``(index, item)`` per item, with
    indices into the document, so this also works on the parts of a document that parsed.
    ``item_ids`` (``(index, id, type)``) may add the ids of items that did not parse.
    """
    evidence = list(evidence)
    items = list(items)
    ids = list(item_ids) if item_ids is not None else [(i, it.id, it.type) for i, it in items]
    errors = _duplicate_ids("evidence", evidence)
    errors += _duplicate_ids("items", [(i, item_id) for i, item_id, _ in ids])
    known = {eid for _, eid in evidence}
    kinds = {item_id: kind for _, item_id, kind in ids}
    for index, item in items:
        base = f"items[{index}]"
        errors += _citation_errors(base, item, known)
        errors += _element_duplicates(base, item)
        if isinstance(item, FlexibleListItem):
            errors += _threshold_errors(base, item)
        if isinstance(item, MetaInsightItem) and item.about is not None:
            errors += _about_errors(base, item.about, kinds)
    return errors


def _duplicate_ids(section: str, ids: Sequence[tuple[int, str]]) -> list[ErrorDetail]:
    seen: dict[str, int] = {}
    errors = []
    for index, value in ids:
        if value in seen:
            errors.append(
                ErrorDetail(
                    f"{section}[{index}].id",
                    "unique-id",
                    f"duplicate id; {section}[{seen[value]}] already uses it",
                    value,
                )
            )
        else:
            seen[value] = index
    return errors


def _cite_lists(item: Item) -> list[tuple[str, tuple[str, ...]]]:
    """Every ``cites`` list inside an item, with its path relative to the item."""
    found: list[tuple[str, tuple[str, ...]]] = [("cites", item.cites)]
    field, elements = item_elements(item)
    found += [(f"{field}[{i}].cites", e.cites) for i, e in enumerate(elements)]
    if isinstance(item, _CONTAINERS):
        found += [(f"meta_insights[{i}].cites", m.cites) for i, m in enumerate(item.meta_insights)]
    return found


def _citation_errors(base: str, item: Item, known: set[str]) -> list[ErrorDetail]:
    errors = []
    for rel, cites in _cite_lists(item):
        for j, cite in enumerate(cites):
            if cite not in known:
                hint = ", ".join(sorted(known)) or "none defined"
                errors.append(
                    ErrorDetail(
                        f"{base}.{rel}[{j}]",
                        "cite-exists",
                        f"cites an evidence id that is not in `evidence` (known: {hint})",
                        cite,
                    )
                )
    return errors


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def _element_duplicates(base: str, item: Item) -> list[ErrorDetail]:
    field, elements = item_elements(item)
    seen: dict[str, int] = {}
    errors = []
    for i, element in enumerate(elements):
        key = _normalise(element.text)
        if key in seen:
            errors.append(
                ErrorDetail(
                    f"{base}.{field}[{i}]",
                    "unique-element",
                    f"repeats {field}[{seen[key]}] (compared ignoring case and whitespace)",
                    element.text,
                )
            )
        else:
            seen[key] = i
    return errors


def _threshold_errors(base: str, item: FlexibleListItem) -> list[ErrorDetail]:
    n = len(item.options)
    errors = []
    baselines = item.min_required
    for i, b in enumerate(baselines):
        if not 1 <= b <= n:
            path = f"{base}.min_required" + (f"[{i}]" if len(baselines) > 1 else "")
            errors.append(
                ErrorDetail(
                    path,
                    "threshold-range",
                    f"a baseline must be between 1 and the number of options ({n})",
                    b,
                )
            )
    if len(baselines) == 2 and baselines[0] >= baselines[1]:
        errors.append(
            ErrorDetail(
                f"{base}.min_required",
                "threshold-order",
                "two baselines must be strictly increasing",
                list(baselines),
            )
        )
    if item.coverage_thresholds is not None:
        errors += _coverage_errors(base, item.coverage_thresholds, max(baselines), n)
    return errors


def _coverage_errors(base: str, thresholds: tuple[int, ...], top: int, n: int) -> list[ErrorDetail]:
    errors = []
    for i, t in enumerate(thresholds):
        path = f"{base}.coverage_thresholds[{i}]"
        if not top < t <= n:
            errors.append(
                ErrorDetail(
                    path,
                    "threshold-range",
                    f"a coverage threshold must be above the highest baseline ({top}) "
                    f"and at most the number of options ({n})",
                    t,
                )
            )
        if i and thresholds[i - 1] >= t:
            errors.append(
                ErrorDetail(
                    path,
                    "threshold-order",
                    "coverage thresholds must be strictly increasing",
                    list(thresholds),
                )
            )
    return errors


_CONTAINER_TYPES = ("strict_list", "flexible_list", "process")


def _about_errors(base: str, about: str, kinds: dict[str, object]) -> list[ErrorDetail]:
    if about not in kinds:
        return [
            ErrorDetail(
                f"{base}.about", "about-exists", "refers to an item id that does not exist", about
            )
        ]
    kind = kinds[about]
    if kind not in _CONTAINER_TYPES:
        return [
            ErrorDetail(
                f"{base}.about",
                "about-type",
                f"must name a strict_list, flexible_list or process item, not a {kind}",
                about,
            )
        ]
    return []
