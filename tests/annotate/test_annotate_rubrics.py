"""Rubric revision through the HTTP API: checklist edits (text, tier, add, remove), the
diff against the compiled checklist, validation, the audit trail, the lost-update guard,
upstream corrections, and the second round after LLM refinement."""

from __future__ import annotations

import json
import threading
from typing import Any

from annotate_helpers import (
    KIMCHI,
    NEW_IDENTITY,
    RUBRIC,
    Client,
    Workspace,
    editor,
    rubric_row,
    write_jsonl,
)
from sqlalchemy import select

from gamut_eval.annotate import ConflictError, Database, import_files
from gamut_eval.annotate._db import Rubric, RubricEvent, User
from gamut_eval.annotate._rubrics import checklist_of, save_checklist
from gamut_eval.rubric import Checklist, MetaRubric, compile_rubric

COMPILED = compile_rubric(MetaRubric.model_validate(RUBRIC))


def state(db: Database) -> tuple[Rubric, Checklist, list[RubricEvent]]:
    with db.read() as session:
        rubric = session.scalars(select(Rubric)).one()
        events = list(session.scalars(select(RubricEvent).order_by(RubricEvent.id)))
        return rubric, checklist_of(rubric), events


def save(c: Client, form: dict[str, str]) -> Any:
    return c.post("/rubrics/1/checklist", form)


def test_edit_text_tier_add_remove_with_diff_and_audit(client: Any, loaded: Database) -> None:
    rubric, checklist, _ = state(loaded)
    assert checklist == COMPILED
    assert rubric.round == 1
    form = editor(
        checklist,
        rubric.version,
        text={"identity": NEW_IDENTITY},
        tier={"core/item-2": "valuable"},
        remove=("toppings/option-3",),
        new=(KIMCHI,),
        comment="kimchi is a common topping",
    )
    response = save(client("ann3"), form)
    assert response.headers["location"] == "/rubrics/1?done=saved"
    rubric, checklist, events = state(loaded)
    assert rubric.version == 2
    assert [c.id for c in checklist.checks] == [
        "identity",
        "core/item-1",
        "core/item-2",
        "toppings/min-2",
        "toppings/option-1",
        "toppings/option-2",
        "toppings/added-1",
    ]
    checks = checklist.by_id()
    assert checks["identity"].text == NEW_IDENTITY
    assert checks["identity"].cites == ("s1",)  # what the form cannot edit is kept
    assert checks["core/item-2"].tier.value == "valuable"
    assert checks["toppings/added-1"].kind.value == "list_option"
    edit = events[-1]
    assert (edit.actor, edit.action, edit.comment, edit.round) == (
        "ann3",
        "checklist",
        "kimchi is a common topping",
        1,
    )
    assert Checklist.model_validate(json.loads(edit.before or "")) == COMPILED
    assert Checklist.model_validate(json.loads(edit.after or "")) == checklist
    page = client("ann1").get("/rubrics/1?done=saved").text
    assert "The checklist was saved." in page
    diff = page[page.index('id="diff"') : page.index('id="corrections"')]
    assert "+ <code>toppings/added-1</code>" in diff
    assert "- <code>toppings/option-3</code>" in diff
    assert f"<ins>{NEW_IDENTITY}</ins>" in diff
    assert "<del>answer_critical</del> → <ins>valuable</ins>" in diff
    again = save(client("ann3"), editor(checklist, 2))
    assert again.headers["location"] == "/rubrics/1?done=unchanged"
    assert len(state(loaded)[2]) == len(events)  # an unchanged save records nothing


def test_every_validation_problem_is_listed_and_nothing_saved(
    client: Any, loaded: Database
) -> None:
    _, checklist, events = state(loaded)
    bad_new = {"item": "nope", "kind": "fact", "tier": "context", "text": "Something."}
    form = editor(
        checklist,
        1,
        text={"identity": "   "},
        tier={"core/item-1": "critical"},
        new=(bad_new, {**KIMCHI, "id": "bad id!"}),
    )
    response = save(client("ann1"), form)
    assert response.status_code == 422
    text = response.text.replace("&#39;", "'")
    expected = (
        "item must be one of the meta-rubric's items (identity, core, toppings); found 'nope'"
    )
    assert f"new check 1: {expected}" in text
    assert "check identity, text: must not be empty or only whitespace" in text
    assert "check core/item-1, tier:" in text
    assert "an id may use letters, digits" in text
    assert "Mentions kimchi among the toppings." in text  # what the person typed is kept
    duplicate = save(client("ann1"), editor(checklist, 1, new=({**KIMCHI, "id": "identity"},)))
    assert duplicate.status_code == 422
    assert "duplicate check id" in duplicate.text.replace("&#39;", "'")
    everything = save(
        client("ann1"), editor(checklist, 1, remove=tuple(c.id for c in checklist.checks))
    )
    assert "a checklist needs at least one check" in everything.text
    tampered = save(client("ann1"), {**editor(checklist, 1), "check-0-id": "invented"})
    assert tampered.status_code == 422
    assert "is not in this checklist" in tampered.text
    after, after_checklist, after_events = state(loaded)
    assert (after.version, after_checklist, len(after_events)) == (1, COMPILED, len(events))


def test_lost_update_is_refused_with_a_clear_message(client: Any, loaded: Database) -> None:
    ann1, ann2 = client("ann1"), client("ann2")
    _, checklist, _ = state(loaded)  # both open the page at version 1
    first = save(ann1, editor(checklist, 1, text={"identity": "Names the dish: bibimbap."}))
    assert first.status_code == 303
    second = save(ann2, editor(checklist, 1, text={"identity": "Says it is bibimbap."}))
    assert second.status_code == 409
    message = second.text
    assert "ann1 saved it (checklist)" in message
    assert "version 2" in message
    assert "your page showed version 1" in message
    assert "NOT saved" in message
    assert state(loaded)[1].by_id()["identity"].text == "Names the dish: bibimbap."
    stale = ann2.post("/rubrics/1/entity", {"version": 1, "entity": "Dolsot bibimbap"})
    assert stale.status_code == 409
    assert state(loaded)[0].entity == "Bibimbap"


def test_simultaneous_saves_keep_exactly_one(loaded: Database) -> None:
    with loaded.read() as session:
        users = [
            session.scalar(select(User).where(User.name == n)) for n in ("ann1", "ann2", "ann3")
        ]
    barrier = threading.Barrier(len(users))
    outcomes: list[str] = []

    def edit(user: Any) -> None:
        form = editor(COMPILED, 1, text={"identity": f"Identifies bibimbap ({user.name})."})
        barrier.wait()
        try:
            with loaded.write() as session, session.begin():
                save_checklist(session, 1, user, form, 1)
            outcomes.append(user.name)
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=edit, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o != "conflict"]
    assert len(winners) == 1
    assert outcomes.count("conflict") == 2
    rubric, checklist, _ = state(loaded)
    assert rubric.version == 2
    assert checklist.by_id()["identity"].text == f"Identifies bibimbap ({winners[0]})."


def test_upstream_corrections_and_round_status(client: Any, loaded: Database) -> None:
    ann1, adj = client("ann1"), client("adj")
    assert (
        ann1.post(
            "/rubrics/1/entity",
            {"version": 1, "entity": "Dolsot bibimbap", "comment": "stone bowl visible"},
        ).status_code
        == 303
    )
    assert state(loaded)[0].entity == "Dolsot bibimbap"
    assert ann1.post("/rubrics/1/ambiguous", {"version": 2, "note": " "}).status_code == 422
    assert (
        ann1.post("/rubrics/1/ambiguous", {"version": 2, "note": "two dishes in view"}).status_code
        == 303
    )
    assert "ambiguous: two dishes in view" in ann1.get("/rubrics/1").text
    assert ann1.post("/rubrics/1/ambiguous", {"version": 3, "clear": "1"}).status_code == 303
    assert state(loaded)[0].ambiguous_note is None
    assert ann1.post("/rubrics/1/drop", {"version": 4, "reason": "no sources"}).status_code == 403
    assert (
        "reason for dropping must not be empty"
        in adj.post("/rubrics/1/drop", {"version": 4, "reason": ""}).text
    )
    assert (
        adj.post(
            "/rubrics/1/drop", {"version": 4, "reason": "no sound rubric: sources disagree"}
        ).status_code
        == 303
    )
    blocked = save(ann1, editor(COMPILED, 5, text={"identity": "x y z"}))
    assert blocked.status_code == 409
    assert "restore it before editing" in blocked.text
    assert adj.post("/rubrics/1/restore", {"version": 5}).status_code == 303
    assert ann1.post("/rubrics/1/complete", {"version": 6}).status_code == 303
    assert state(loaded)[0].status == "done"
    assert "reopen it to edit" in save(ann1, editor(COMPILED, 7, text={"identity": "x y z"})).text
    assert ann1.post("/rubrics/1/reopen", {"version": 7}).status_code == 303
    _, _, events = state(loaded)
    assert [e.action for e in events] == [
        "import",
        "entity",
        "ambiguous",
        "ambiguous",
        "drop",
        "restore",
        "complete",
        "reopen",
    ]
    entity = events[1]
    assert (entity.actor, json.loads(entity.before or "")) == ("ann1", {"entity": "Bibimbap"})
    assert json.loads(entity.after or "")["entity"] == "Dolsot bibimbap"


def test_second_round_after_llm_refinement_carries_round_one_edits(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    ann1 = client("ann1")
    form = editor(
        COMPILED,
        1,
        text={"identity": NEW_IDENTITY, "toppings/min-2": "Names two toppings."},
        tier={"core/item-2": "valuable"},
        remove=("toppings/option-3",),
        new=(KIMCHI, {**KIMCHI, "text": "Mentions a fried egg on top.", "id": "toppings/egg"}),
    )
    assert save(ann1, form).status_code == 303
    ann1.post("/rubrics/1/complete", {"version": 2})
    refined = json.loads(json.dumps(RUBRIC))
    refined["items"][2]["options"].append("kimchi")  # the refinement found a fourth topping
    path = write_jsonl(workspace.root / "refined.jsonl", [rubric_row(refined)])
    [summary] = import_files(loaded, [path])
    described = summary.describe()
    assert "1 rubrics (0 new, 1 started their next revision round, 0 unchanged" in described
    assert "4 edits of the previous round carried over, 2 not" in described
    rubric, checklist, events = state(loaded)
    assert (rubric.round, rubric.status) == (2, "open")
    recompiled = compile_rubric(MetaRubric.model_validate(refined)).by_id()
    checks = checklist.by_id()
    assert checks["identity"].text == NEW_IDENTITY  # unchanged by the refinement: re-applied
    assert checks["core/item-2"].tier.value == "valuable"
    assert "toppings/option-3" not in checks
    assert checks["toppings/egg"].text == "Mentions a fried egg on top."
    assert checks["toppings/min-2"] == recompiled["toppings/min-2"]  # both changed: refined wins
    assert checks["toppings/option-4"] == recompiled["toppings/option-4"]  # kimchi, once
    assert "toppings/added-1" not in checks
    last = events[-1]
    assert (last.action, last.round) == ("import", 2)
    assert "not carried: toppings/min-2: the refinement changed it" in last.comment
    assert "not carried: toppings/added-1: the refinement now has this check itself" in last.comment
    before = json.loads(last.before or "")
    assert before["checklist"]["checks"][0]["text"] == NEW_IDENTITY  # round 1 stays on record
    [again] = import_files(loaded, [path])
    assert "1 unchanged" in again.describe()
    assert state(loaded)[0].round == 2
    assert "round 2" in ann1.get("/rubrics/1").text


def test_a_refined_row_with_its_own_checklist_is_taken_as_is(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    save(client("ann1"), editor(COMPILED, 1, text={"identity": NEW_IDENTITY}))
    own = COMPILED.model_copy(update={"checks": COMPILED.checks[:3]})
    row = rubric_row(checklist=own.model_dump(mode="json"))
    import_files(loaded, [write_jsonl(workspace.root / "own.jsonl", [row])])
    rubric, checklist, _ = state(loaded)
    assert rubric.round == 2
    assert checklist == own


def test_markup_in_rubric_text_is_escaped(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    hostile = json.loads(json.dumps(RUBRIC))
    hostile["id"] = "q-xss"
    hostile["items"][0]["statement"] = "<script>window.__xss=1</script><img src=x onerror=alert(1)>"
    hostile["evidence"][0]["source"] = "javascript:alert(1)"
    import_files(
        loaded, [write_jsonl(workspace.root / "x.jsonl", [rubric_row(hostile, metadata={})])]
    )
    page = client("ann1").get("/rubrics/2").text
    assert "<script>window" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in page
    assert 'href="javascript:' not in page
    assert "javascript:alert(1)" in page
