"""Editing a check's text drops the compiler's structured data, which described the old
text; a tier-only edit keeps it; carrying edits ignores it when comparing checks (pure)."""

from __future__ import annotations

from typing import Any

from gamut_eval.annotate._checklists import apply_form, carry_edits, parse_checklist_form
from gamut_eval.rubric import Check, Checklist, compile_rubric, validate_meta_rubric

META = validate_meta_rubric(
    {
        "id": "q-1",
        "question": "What is this?",
        "items": [
            {"id": "maker", "type": "fact", "tier": "valuable", "statement": "Names the maker."},
            {
                "id": "uses",
                "type": "flexible_list",
                "tier": "answer_critical",
                "name": "uses",
                "options": ["espresso", "tea", "soup"],
                "min_required": 2,
            },
        ],
    }
)


def _form(checklist: Checklist, texts: dict[str, str] | None = None) -> dict[str, str]:
    texts = texts or {}
    form: dict[str, str] = {}
    for i, check in enumerate(checklist.checks):
        form[f"check-{i}-id"] = check.id
        form[f"check-{i}-text"] = texts.get(check.id, check.text)
        form[f"check-{i}-tier"] = str(check.tier)
    return form


def _structure(check: Check) -> tuple[Any, ...]:
    return (check.target, check.options, check.at_least)


def test_editing_the_text_drops_the_structured_data() -> None:
    compiled = compile_rubric(META)
    assert _structure(compiled.by_id()["uses/min-2"]) == ("uses", ("espresso", "tea", "soup"), 2)
    form = _form(compiled, {"uses/min-2": "Names two drinks it makes."})
    edited = apply_form(compiled, META, parse_checklist_form(form)).by_id()
    assert edited["uses/min-2"].text == "Names two drinks it makes."
    assert _structure(edited["uses/min-2"]) == (None, (), None)
    # Unedited checks keep theirs.
    assert edited["maker"] == compiled.by_id()["maker"]
    assert edited["uses/option-1"] == compiled.by_id()["uses/option-1"]


def test_a_tier_only_edit_keeps_the_structured_data() -> None:
    compiled = compile_rubric(META)
    form = _form(compiled)
    index = [c.id for c in compiled.checks].index("uses/min-2")
    form[f"check-{index}-tier"] = "valuable"
    edited = apply_form(compiled, META, parse_checklist_form(form)).by_id()["uses/min-2"]
    assert str(edited.tier) == "valuable"
    assert _structure(edited) == _structure(compiled.by_id()["uses/min-2"])


def test_checklists_stored_without_structured_data_still_load_and_carry() -> None:
    """A checklist saved before the compiler emitted structured data: it loads, and its
    edits are carried onto a fresh compile as before (the data is not a change)."""
    compiled = compile_rubric(META)
    legacy = compiled.model_dump(mode="json")
    for check in legacy["checks"]:
        for field in ("target", "options", "at_least"):
            del check[field]
    old_base = Checklist.model_validate(legacy)
    assert all(_structure(c) == (None, (), None) for c in old_base.checks)
    edited = Checklist.model_validate(
        {
            **legacy,
            "checks": [
                {**c, "text": "Names who makes it."} if c["id"] == "maker" else c
                for c in legacy["checks"]
            ],
        }
    )
    carried = carry_edits(old_base, edited, compiled, META)
    assert carried.notes == ()
    assert carried.applied == 1
    assert carried.checklist.by_id()["maker"].text == "Names who makes it."
