"""What an upstream edit does to the fields derived from what it changed (pure).

A rubric carries fields made from others: the text-only question (from the question and
the entity), the compiled checklist (from the meta-rubric's items), the meta-rubric's own
copies of the question and the entity, and the LLM review's stranger test (which judged
the question knowing the entity). When people correct the entity, reword the question or
edit an item, each derived field is either re-derived here, deterministically and without
a model, or marked **stale**: emptied where the export would otherwise hold it, and listed
in the export's ``metadata.annotation.stale`` for the next build round
(``gamut build text-only --input`` rewrites stale text-only questions):

| edit | re-derived here | stale |
|---|---|---|
- **entity**: ``meta_rubric.entity`` is set; the text-only question gets the new name where
  the old one occurs as whole words, else it is stale; the stranger test is stale. Checks
  that name the old entity are listed in the audit note (people decide; they are content).
  A question that names the corrected entity fails the stranger test, and the mark says so.
- **question**: ``meta_rubric.question`` is set; the text-only question and the stranger
  test are stale. A wording that names the entity is refused (the stranger test's plainest
  failure, decided without a model).
- **item**: the checklist is re-compiled from the items, people's check edits carried over
  (``_carry``); nothing becomes stale.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from gamut_eval.annotate._carry import carry_edits
from gamut_eval.rubric import Checklist, MetaRubric, compile_rubric

__all__ = [
    "STRANGER_TEST",
    "TEXT_ONLY",
    "Rederived",
    "after_entity",
    "after_items",
    "after_question",
    "checks_naming",
    "names",
    "rename_entity",
]

TEXT_ONLY = "question_text_only"
"""The text-only question (the dataset field)."""
STRANGER_TEST = "stranger_test"
"""The LLM review's verdict that the question does not presuppose the entity."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Rederived:
    """The outcome of one edit: column values to set, what was re-derived (field -> how),
    what is stale (field -> why), and notes for the audit trail."""

    values: dict[str, Any]
    derived: dict[str, str] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def audit(self) -> dict[str, Any]:
        """What goes into the edit's audit event beside the edited value."""
        out: dict[str, Any] = {}
        if self.derived:
            out["derived"] = self.derived
        if self.stale:
            out["stale"] = self.stale
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _name_pattern(name: str) -> re.Pattern[str] | None:
    """The name as a run of whole words, case-insensitive, any spacing or punctuation between
    its words ("Eiffel  Tower", "eiffel-tower")."""
    words = _WORD.findall(unicodedata.normalize("NFKC", name))
    if not words:
        return None
    body = r"\W+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def rename_entity(text: str, old: str, new: str) -> str | None:
    """``text`` with every whole-word occurrence of ``old`` replaced by ``new``; ``None`` when
    ``old`` does not occur (the text cannot be fixed without rewriting it). A text that names
    ``new`` already is kept as it is ("Bibimbap" corrected to "Dolsot bibimbap")."""
    pattern = _name_pattern(old)
    if pattern is None:
        return None
    if names(text, new):
        return text
    renamed, count = pattern.subn(lambda _: new, text)
    return renamed if count else None


def names(text: str, name: str) -> bool:
    """True when ``text`` names ``name`` as a run of whole words."""
    pattern = _name_pattern(name)
    return pattern is not None and pattern.search(text) is not None


def checks_naming(checklist: Checklist, name: str) -> list[str]:
    """Ids of the checks whose text names ``name`` (people may want to revise them)."""
    pattern = _name_pattern(name)
    if pattern is None:
        return []
    return [c.id for c in checklist.checks if pattern.search(c.text)]


def _meta_with(meta: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**meta, **fields}


def after_entity(
    *,
    old: str | None,
    new: str,
    question: str,
    text_only: str | None,
    meta: dict[str, Any],
    checklist: Checklist,
) -> Rederived:
    """The entity was corrected from ``old`` to ``new``."""
    values: dict[str, Any] = {"entity": new, "meta_rubric": _meta_with(meta, entity=new)}
    derived = {"meta_rubric.entity": "set to the corrected entity"}
    stale = {
        STRANGER_TEST: "the LLM review judged the question knowing the old entity "
        f"({old!r}); no command re-runs it on a rubric: check it by hand, or review the "
        "question again in a build whose manifest has the corrected entity"
    }
    notes: list[str] = []
    if names(question, new):
        stale[STRANGER_TEST] = (
            f"the question names the corrected entity ({new!r}), so it fails the stranger "
            "test: reword it to refer to the entity through what the photo shows"
        )
    if text_only is not None:
        renamed = rename_entity(text_only, old, new) if old else None
        if renamed is not None:
            values[TEXT_ONLY] = renamed
            derived[TEXT_ONLY] = f"{old!r} replaced by {new!r}"
        else:
            values[TEXT_ONLY] = None
            stale[TEXT_ONLY] = (
                f"it does not name the old entity ({old!r}) in a form that can be replaced, so "
                "it needs rewriting; until `gamut build text-only --input` rewrites it, the "
                "text-only setting asks the question followed by the corrected entity"
            )
    if old:
        named = [c for c in checks_naming(checklist, old) if c not in checks_naming(checklist, new)]
        if named:
            notes.append(f"checks naming the old entity {old!r}: {', '.join(named)}")
    return Rederived(values, derived, stale, tuple(notes))


def after_question(*, old: str, new: str, text_only: str | None, meta: dict[str, Any]) -> Rederived:
    """The question was reworded from ``old`` to ``new``."""
    values: dict[str, Any] = {"question": new, "meta_rubric": _meta_with(meta, question=new)}
    stale = {
        STRANGER_TEST: "the LLM review judged the old wording; the new one has not been "
        "reviewed (import it as a candidate question, or check it by hand)"
    }
    if text_only is not None:
        values[TEXT_ONLY] = None
        stale[TEXT_ONLY] = (
            "it rewrote the old wording; until `gamut build text-only --input` rewrites it, "
            "the text-only setting asks the new question followed by the entity"
        )
    return Rederived(values, {"meta_rubric.question": "set to the new wording"}, stale)


def after_items(*, old_meta: MetaRubric, new_meta: MetaRubric, checklist: Checklist) -> Rederived:
    """The meta-rubric's items were edited: the checklist is re-compiled from them and the
    checks people edited keep their edits wherever the item edit left the check as it was."""
    config = checklist.config
    carried = carry_edits(
        compile_rubric(old_meta, config), checklist, compile_rubric(new_meta, config), new_meta
    )
    values = {
        "meta_rubric": new_meta.model_dump(mode="json"),
        "checklist": carried.checklist.model_dump(mode="json"),
    }
    how = f"re-compiled from the edited items; {carried.applied} edits carried over"
    return Rederived(values, {"checklist": how}, {}, carried.notes)
