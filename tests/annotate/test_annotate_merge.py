"""Checklist edits from stale pages are merged check by check: edits of different checks
all land; a check both people changed is refused with both versions shown side by side and
the refused edit kept in the page (never lost); saving the refilled page then works."""

from __future__ import annotations

import html
import re
from typing import Any

from annotate_helpers import RUBRIC, Client, editor
from sqlalchemy import select

from gamut_eval.annotate import Database
from gamut_eval.annotate._db import Rubric, RubricEvent
from gamut_eval.annotate._rubrics import checklist_of
from gamut_eval.rubric import Checklist, MetaRubric, Tier, compile_rubric

COMPILED = compile_rubric(MetaRubric.model_validate(RUBRIC))
"""identity, core/item-1, core/item-2, toppings/min-2, toppings/option-1..3."""


def state(db: Database) -> tuple[int, Checklist, list[str]]:
    with db.read() as session:
        rubric = session.scalars(select(Rubric)).one()
        events = session.scalars(select(RubricEvent).order_by(RubricEvent.id))
        return rubric.version, checklist_of(rubric), [f"{e.actor}:{e.action}" for e in events]


def save(c: Client, form: dict[str, str]) -> Any:
    return c.post("/rubrics/1/checklist", form)


def form_of(page: str) -> dict[str, str]:
    """The editor's fields as the page would submit them (inputs, selects, text areas)."""
    editor_html = page[page.index('id="checklist-form"') :]
    editor_html = editor_html[: editor_html.index("</form>")]
    fields: dict[str, str] = {}
    for tag in re.finditer(r"<input ([^>]*)>", editor_html):
        attrs = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', tag[1]))
        if "name" not in attrs or (attrs.get("type") == "checkbox" and "checked" not in tag[1]):
            continue
        fields[attrs["name"]] = html.unescape(attrs.get("value", ""))
    for area in re.finditer(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', editor_html, re.S):
        fields[area[1]] = html.unescape(area[2])
    for select_ in re.finditer(r'<select name="([^"]+)".*?</select>', editor_html, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', select_[0])
        fields[select_[1]] = chosen[1] if chosen else ""
    return fields


def test_edits_of_different_checks_both_land(client: Any, loaded: Database) -> None:
    ann1, ann2 = client("ann1"), client("ann2")  # both open version 1
    first = save(ann1, editor(COMPILED, 1, text={"identity": "Names the dish: bibimbap."}))
    second = save(
        ann2,
        editor(
            COMPILED,
            1,
            tier={"core/item-2": "valuable"},
            remove=("toppings/option-3",),
            new=(
                {"item": "toppings", "kind": "list_option", "tier": "context", "text": "Kimchi."},
            ),
        ),
    )
    assert (first.status_code, second.status_code) == (303, 303)
    assert second.headers["location"] == "/rubrics/1?done=saved"
    version, checklist, events = state(loaded)
    checks = checklist.by_id()
    assert version == 3
    assert checks["identity"].text == "Names the dish: bibimbap."  # ann1's edit survived
    assert checks["core/item-2"].tier is Tier.VALUABLE  # and ann2's landed
    assert "toppings/option-3" not in checks
    assert checks["toppings/added-1"].text == "Kimchi."
    assert checks["core/item-1"] == COMPILED.by_id()["core/item-1"]  # untouched, structure kept
    assert events[-2:] == ["ann1:checklist", "ann2:checklist"]


def test_the_same_edit_on_both_sides_is_no_conflict(client: Any, loaded: Database) -> None:
    same = {"identity": "Says it is bibimbap."}
    assert save(client("ann1"), editor(COMPILED, 1, text=same)).status_code == 303
    assert save(client("ann2"), editor(COMPILED, 1, text=same)).status_code == 303
    assert state(loaded)[2][-1] != "ann2:checklist"  # nothing left to change: no event


def test_a_real_conflict_shows_both_versions_and_keeps_the_refused_edit(
    client: Any, loaded: Database
) -> None:
    ann1, ann2 = client("ann1"), client("ann2")
    assert (
        save(ann1, editor(COMPILED, 1, text={"identity": "Names the dish: bibimbap."})).status_code
        == 303
    )
    refused = save(
        ann2,
        editor(
            COMPILED,
            1,
            text={"identity": "Says it is bibimbap, a Korean dish."},
            tier={"core/item-2": "context"},
        ),
    )
    assert refused.status_code == 409
    page = refused.text
    assert "NOT saved" in page
    assert "1 check(s) were changed by you and by someone else (identity)" in page
    assert "ann1 saved it (checklist)" in page
    row = page[page.index('<tr class="conflict" data-check="identity">') :]
    row = row[: row.index("</tr>")]
    base = COMPILED.by_id()["identity"].text
    assert re.search(r'class="base">\[Answer-Critical\] ' + re.escape(base), row)
    assert 'class="theirs">[Answer-Critical] Names the dish: bibimbap.' in row
    assert "by ann1 at " in row
    assert "Says it is bibimbap, a Korean dish." in row  # the refused edit is on the page
    assert 'data-text="Says it is bibimbap, a Korean dish."' in row
    version, checklist, events = state(loaded)
    assert (version, checklist.by_id()["core/item-2"].tier) == (2, Tier.ANSWER_CRITICAL)
    assert events[-1] == "ann1:checklist"  # nothing of ann2's was saved

    # The editor is refilled at version 2: ann1's text for the conflict, ann2's other edit.
    form = form_of(page)
    assert form["version"] == "2"
    i = next(k.split("-")[1] for k, v in form.items() if v == "identity")
    j = next(k.split("-")[1] for k, v in form.items() if v == "core/item-2")
    assert form[f"check-{i}-text"] == "Names the dish: bibimbap."
    assert form[f"check-{j}-tier"] == "context"
    form[f"check-{i}-text"] = "Says it is bibimbap, a Korean dish."  # "use my version"
    assert save(ann2, form).status_code == 303
    version, checklist, events = state(loaded)
    assert version == 3
    assert checklist.by_id()["identity"].text == "Says it is bibimbap, a Korean dish."
    assert checklist.by_id()["core/item-2"].tier is Tier.CONTEXT
    assert events[-1] == "ann2:checklist"


def test_an_edit_of_a_check_removed_meanwhile_is_a_conflict(client: Any, loaded: Database) -> None:
    assert (
        save(client("ann1"), editor(COMPILED, 1, remove=("toppings/option-1",))).status_code == 303
    )
    refused = save(
        client("ann2"), editor(COMPILED, 1, text={"toppings/option-1": "Beef (bulgogi)."})
    )
    assert refused.status_code == 409
    row = refused.text[refused.text.index('data-check="toppings/option-1">') :]
    row = row[: row.index("</tr>")]
    assert "<em>removed</em>" in row
    assert "Beef (bulgogi)." in row
    assert "add it again as a new check" in row
    # A removal of a check nobody touched merges; of a check edited meanwhile, conflicts.
    assert (
        save(client("ann3"), editor(COMPILED, 1, remove=("toppings/option-2",))).status_code == 303
    )
    assert "toppings/option-2" not in state(loaded)[1].by_id()
    assert (
        save(client("ann1"), editor(COMPILED, 1, text={"core/item-1": "Rice."})).status_code == 303
    )
    refused = save(client("ann2"), editor(COMPILED, 1, remove=("core/item-1",)))
    assert refused.status_code == 409
    row = refused.text[refused.text.index('data-check="core/item-1">') :]
    row = row[: row.index("</tr>")]
    assert "<em>you removed it</em>" in row
    assert "Rice." in row
    assert "core/item-1" in state(loaded)[1].by_id()


def test_a_stale_form_without_base_values_is_refused_whole(client: Any, loaded: Database) -> None:
    """A client that does not send what its page showed cannot be merged: the old rule."""
    assert (
        save(client("ann1"), editor(COMPILED, 1, text={"identity": "X is bibimbap."})).status_code
        == 303
    )
    form = {
        k: v
        for k, v in editor(COMPILED, 1, tier={"core/item-2": "context"}).items()
        if "-base-" not in k
    }
    refused = save(client("ann2"), form)
    assert refused.status_code == 409
    assert "Reload the page, then apply your changes again." in refused.text
    assert state(loaded)[1].by_id()["core/item-2"].tier is Tier.ANSWER_CRITICAL


def test_a_refused_stale_form_keeps_its_version_so_saving_again_still_merges(
    client: Any, loaded: Database
) -> None:
    """A stale save with an invalid value shows the form again (422) at the version it was
    made at: fixing and saving it merges, and does not undo the edit made meanwhile."""
    assert (
        save(client("ann1"), editor(COMPILED, 1, text={"identity": "By ann1."})).status_code == 303
    )
    ann2 = client("ann2")
    refused = save(ann2, editor(COMPILED, 1, text={"core/item-1": "  "}))
    assert refused.status_code == 422
    form = form_of(refused.text)
    assert form["version"] == "1"
    i = next(k.split("-")[1] for k, v in form.items() if v == "core/item-1")
    form[f"check-{i}-text"] = "Steamed white rice."
    assert save(ann2, form).status_code == 303
    checks = state(loaded)[1].by_id()
    assert checks["identity"].text == "By ann1."
    assert checks["core/item-1"].text == "Steamed white rice."
