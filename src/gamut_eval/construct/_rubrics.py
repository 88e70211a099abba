"""Rubrics checked and read: a model's items made into a grounded meta-rubric, the superset
rule of refinement, and rubric files with the question each row states.

A model's items become a valid meta-rubric, or errors to feed back. The evidence, id,
question and entity are ours; the model writes only the items. Its items are validated with
the project's own validator (every problem at once, with JSON paths that match the model's
``{"items": [...]}``), and one rule the format leaves optional is required here: every item
cites evidence, on the item or on each of its elements, since a built rubric must be
grounded in the snippets (docs/method.md [B6]).

The refined rubric is a verified superset of the draft. The invariant
(``gamut_eval.rubric._superset`` defines it, the same check ``gamut build diff`` runs):
every item of the rubric refined, every element of its lists, steps and aspects in its
position, every nested meta-insight, citation, tier, threshold, ``required`` flag and
wording stands unchanged; the rebuild may only add. The audit's exceptions: an item it
allows to drop (with the reason), and snippets that failed re-verification with their
citations. Whatever else the rebuild removed or changed is restored and recorded.

Meta-rubrics are read from any file the project writes, one per question: ``gamut build
diff`` and ``gamut build refine --input`` accept:

- a single meta-rubric (YAML or JSON, as ``gamut validate`` reads it);
- rows (JSONL, a JSON array, Parquet) of one kind, told by their fields: drafts
  (``draft/drafts.jsonl``: ``question_id``, ``meta_rubric``, ``checklist``), refined records
  (``refine/refined.jsonl``: the same plus ``audit``), or dataset records (``id``,
  ``meta_rubric``, optionally a revised ``checklist``: ``dataset.jsonl``, the rubrics
  ``gamut build refine`` writes for the annotation app, and the app's export).

Rubrics are keyed by question id (the meta-rubric's ``id``). Every problem of every row is
reported (file, line, path, rule, value) before anything else happens.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic

from gamut_eval._files import parse_json, read_text
from gamut_eval._tables import read_rows
from gamut_eval.construct._models import (
    AcceptedQuestion,
    CheckChange,
    DraftRecord,
    DropReason,
    Invalid,
    ItemChange,
    Provenance,
    RefinedRecord,
    RubricDiff,
)
from gamut_eval.construct._text import element_key
from gamut_eval.construct._workdir import content_hash
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import (
    Check,
    Checklist,
    Evidence,
    Item,
    MetaRubric,
    RubricChange,
    diff_meta_rubrics,
    item_elements,
    load_meta_rubric,
    pydantic_details,
    restore_superset,
    superset_problems,
    validate_meta_rubric,
)


def element_cites(item: Item) -> list[tuple[str, ...]]:
    """The ``cites`` of each list element, option, step or aspect of an item."""
    return [e.cites for e in item_elements(item)[1]]


def grounding_errors(meta: MetaRubric) -> list[str]:
    """Items that cite no evidence (neither on the item nor on every element)."""
    errors = []
    for index, item in enumerate(meta.items):
        elements = element_cites(item)
        if item.cites or (elements and all(elements)):
            continue
        errors.append(
            f"items[{index}].cites: item {item.id!r} cites no snippet; cite the ids of the "
            "snippets that support it (on the item, or on each of its elements) [cite-required]"
        )
    return errors


def rubric_from_items(
    *,
    rubric_id: str,
    question: str,
    entity: str | None,
    evidence: Sequence[Evidence],
    data: Any,
) -> MetaRubric:
    """The meta-rubric made of our header and the model's ``items``; ``Invalid`` lists every
    problem (structure, rules, grounding)."""
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise Invalid(['`items` is missing or not a list: reply {"items": [...]}'])
    document = {
        "id": rubric_id,
        "question": question,
        "entity": entity,
        "evidence": [e.model_dump(exclude_none=True) for e in evidence],
        "items": items,
    }
    try:
        meta = validate_meta_rubric(document)
    except ValidationError as exc:
        raise Invalid([d.render() for d in exc.details]) from None
    errors = grounding_errors(meta)
    if errors:
        raise Invalid(errors)
    return meta


def element_texts(item: Item) -> list[str]:
    """The texts of an item's list elements, options, steps or aspects."""
    return [e.text for e in item_elements(item)[1]]


def sanctioned(change: RubricChange, drops: Collection[str], failed: Collection[str]) -> bool:
    """Whether the audit lets this change happen: a whole item it allows to drop (and the
    rebuild dropped), a snippet that failed re-verification, or a citation of one."""
    if change.kind != "removed":
        return False
    if change.path == change.item and change.item in drops:
        return True
    cited = re.fullmatch(r"(?:.*\.cites|evidence)\[(.+)\]", change.path)
    return cited is not None and cited.group(1) in failed


def enforce_superset(
    draft: MetaRubric, rebuilt: MetaRubric, drops: Collection[str], failed: Collection[str]
) -> tuple[MetaRubric, list[RubricChange]]:
    """The rebuild made a superset of the draft, and what had to be restored.

    ``drops``: items the audit allows to drop that the rebuild dropped; ``failed``: snippet
    ids that failed re-verification (they and their citations may go). Everything else the
    rebuild removed or changed is put back (``restore_superset``); ``Invalid`` if the
    restored rubric breaks a rule.
    """
    problems = [
        c
        for c in superset_problems(diff_meta_rubrics(draft, rebuilt))
        if not sanctioned(c, drops, failed)
    ]
    if not problems:
        return rebuilt, []
    try:
        restored = restore_superset(draft, rebuilt, drop_items=drops, drop_cites=failed)
    except ValidationError as exc:
        raise Invalid(
            [
                "restoring what the rebuild removed or changed breaks a rule: keep the draft's "
                "items as they are",
                *(d.render() for d in exc.details),
            ]
        ) from None
    return restored, problems


def _item_change(before: Item, after: Item) -> ItemChange | None:
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    fields = tuple(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))
    if not fields:
        return None
    known = {element_key(t) for t in element_texts(before)}
    added = tuple(t for t in element_texts(after) if element_key(t) not in known)
    return ItemChange(item=after.id, change="changed", fields=fields, elements_added=added)


def _shown(check: Check) -> str:
    return f"[{check.tier.short}] {check.text}"


def _check_changes(before: Checklist, after: Checklist) -> list[CheckChange]:
    old, new = before.by_id(), after.by_id()
    changes = [
        CheckChange(check=cid, change="dropped", before=_shown(c))
        for cid, c in old.items()
        if cid not in new
    ]
    for cid, check in new.items():
        if cid not in old:
            changes.append(CheckChange(check=cid, change="added", after=_shown(check)))
        elif _shown(old[cid]) != _shown(check):
            changes.append(
                CheckChange(
                    check=cid, change="changed", before=_shown(old[cid]), after=_shown(check)
                )
            )
    return changes


def rubric_diff(
    draft: MetaRubric,
    refined: MetaRubric,
    draft_checks: Checklist,
    refined_checks: Checklist,
    dropped: list[DropReason],
) -> RubricDiff:
    """Items and compiled checks added, changed or dropped from draft to refined."""
    reasons = {d.item: d.reason for d in dropped}
    after = {item.id: item for item in refined.items}
    changes: list[ItemChange] = []
    for item in draft.items:
        if item.id in reasons:
            changes.append(ItemChange(item=item.id, change="dropped", reason=reasons[item.id]))
        elif item.id in after and (change := _item_change(item, after[item.id])) is not None:
            changes.append(change)
    draft_ids = {item.id for item in draft.items}
    changes += [
        ItemChange(item=i.id, change="added", elements_added=tuple(element_texts(i)))
        for i in refined.items
        if i.id not in draft_ids
    ]
    return RubricDiff(
        items=tuple(changes), checks=tuple(_check_changes(draft_checks, refined_checks))
    )


RowKind = Literal["rubric", "draft", "refined", "dataset"]


@dataclass(frozen=True)
class RubricRow:
    """One question's meta-rubric as a file holds it."""

    kind: RowKind
    meta: MetaRubric
    line: int
    checklist: Checklist | None = None
    """The checklist the row carries (a dataset row's revised one, a stage record's compiled
    one); None when it has none."""
    record: DatasetRecord | None = None
    """The dataset record (``kind == "dataset"``)."""
    base: Path | None = None
    """The folder its relative image path is relative to."""

    @property
    def id(self) -> str:
        return self.meta.id


def _kind(data: Any) -> RowKind | None:
    if not isinstance(data, dict) or "meta_rubric" not in data:
        return None
    if "question_id" in data:
        return "refined" if "audit" in data else "draft"
    return "dataset" if "id" in data else None


def _row(data: dict[str, Any], kind: RowKind, line: int, path: Path) -> RubricRow:
    meta = validate_meta_rubric(data["meta_rubric"], prefix="meta_rubric")
    if kind == "dataset":
        record = DatasetRecord.model_validate({**data, "meta_rubric": meta})
        return RubricRow(kind, meta, line, record.checklist, record, path.parent)
    model = RefinedRecord if kind == "refined" else DraftRecord
    parsed = model.model_validate({**data, "meta_rubric": meta})
    return RubricRow(kind, meta, line, parsed.checklist)


def _rows(path: Path, errors: list[ErrorDetail]) -> list[RubricRow]:
    rows: list[RubricRow] = []
    first: tuple[RowKind, int] | None = None
    for line, data in read_rows(path, what="rubrics", errors=errors):
        where = f"{path}:{line}"
        kind = _kind(data)
        if kind is None:
            found = sorted(data) if isinstance(data, dict) else data
            errors.append(
                ErrorDetail(
                    "$",
                    "row-kind",
                    "expected a dataset record (`id`, "
                    "`meta_rubric`) or a stage record (`question_id`, "
                    "`meta_rubric`)",
                    found,
                ).in_file(where)
            )
            continue
        if first is None:
            first = (kind, line)
        elif first[0] != kind:
            errors.append(
                ErrorDetail(
                    "$",
                    "row-kind-same",
                    f"line {first[1]} is a {first[0]} row; every row of a file must be of one kind",
                    kind,
                ).in_file(where)
            )
            continue
        try:
            rows.append(_row(data, kind, line, path))
        except ValidationError as exc:
            errors += [d.in_file(where) for d in exc.details]
        except pydantic.ValidationError as exc:
            errors += [d.in_file(where) for d in pydantic_details(exc)]
    return rows


def read_rubric_file(path: str | Path) -> dict[str, RubricRow]:
    """Every rubric in ``path`` by question id (see the module docstring)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return {(meta := load_meta_rubric(path)).id: RubricRow("rubric", meta, 1)}
    if suffix == ".json":
        try:
            data = parse_json(read_text(path))
        except ValueError:
            data = None  # reading it as rows reports where it breaks
        if isinstance(data, dict) and "items" in data:
            return {(meta := load_meta_rubric(path)).id: RubricRow("rubric", meta, 1)}
    errors: list[ErrorDetail] = []
    rows = _rows(path, errors)
    by_id: dict[str, RubricRow] = {}
    for row in rows:
        if row.id in by_id:
            errors.append(
                ErrorDetail(
                    "meta_rubric.id",
                    "unique-id",
                    f"duplicate question id; line {by_id[row.id].line} has it",
                    row.id,
                ).in_file(f"{path}:{row.line}")
            )
        by_id.setdefault(row.id, row)
    if errors:
        raise ValidationError(errors)
    if not by_id:
        raise ValidationError([ErrorDetail("$", "not-empty", "holds no rubric").in_file(path)])
    return by_id


def row_image(row: RubricRow) -> Path | None:
    record = row.record
    if record is None or record.image is None or row.base is None:
        return None
    return (row.base / record.image).resolve()


def row_question(row: RubricRow, where: str) -> AcceptedQuestion:
    """The question as the row states it (no accepted question in the build folder)."""
    record, image = row.record, row_image(row)
    entity = record.entity if record is not None else row.meta.entity
    if not entity and (image is None or not image.is_file()):
        raise ValidationError(
            [
                ErrorDetail(
                    "entity",
                    "entity-or-image",
                    "the independent search needs the entity, or the "
                    "image to look at; give `entity` or an `image` that exists",
                    None,
                ).in_file(where)
            ]
        )
    sha = hashlib.sha256(image.read_bytes()).hexdigest() if image and image.is_file() else ""
    return AcceptedQuestion(
        id=row.id,
        image_id=row.id,
        image=str(image or ""),
        image_sha256=sha,
        question=record.question if record is not None else row.meta.question,
        candidate_id=row.id,
        entity=entity,
        domain=record.domain if record is not None else None,
        popularity=record.popularity if record is not None else None,
        provenance=Provenance(
            stage="input", model=None, prompt_version=None, inputs={}, key=content_hash(row.id)
        ),
    )
