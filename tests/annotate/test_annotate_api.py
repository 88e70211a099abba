"""The question rounds through the HTTP API: every transition, adjudication, re-entry,
independence of reviews, the lost-update guard, the dashboard's agreement, and export."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import pytest
from annotate_helpers import Client, Workspace, candidate_row, write_jsonl
from sqlalchemy import select

from gamut_eval.analysis import cohen_kappa
from gamut_eval.annotate import ConflictError, Database, export_dataset, import_files
from gamut_eval.annotate._db import Question, Review, User
from gamut_eval.annotate._pages import agreement
from gamut_eval.annotate._questions import revision_id, submit_review


def question(db: Database, candidate_id: str) -> Question:
    with db.read() as session:
        found = session.scalar(select(Question).where(Question.candidate_id == candidate_id))
        assert found is not None, candidate_id
        return found


def review(c: Client, candidate_id: str, db: Database, decision: str, text: str = "") -> Any:
    qid = question(db, candidate_id).id
    return c.post(f"/questions/{qid}/review", {"decision": decision, "revised_text": text})


def rule(c: Client, candidate_id: str, db: Database, decision: str, text: str = "") -> Any:
    q = question(db, candidate_id)
    data = {"decision": decision, "revised_text": text, "version": q.version}
    return c.post(f"/questions/{q.id}/adjudicate", data)


def test_two_accepts_advance(client: Any, loaded: Database) -> None:
    ann1, ann2 = client("ann1"), client("ann2")
    assert review(ann1, "c-dish-1", loaded, "accept").status_code == 303
    assert question(loaded, "c-dish-1").status == "pending"  # one review is not a decision
    assert (
        review(ann2, "c-dish-1", loaded, "accept").headers["location"] == "/review/next?done=review"
    )
    assert question(loaded, "c-dish-1").status == "accepted"
    page = ann1.get("/?image_status=accepted").text
    assert "img-dish" in page
    assert "img-plant" not in page


def test_two_discards_flag_the_image_until_new_candidates_come(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    ann1, ann2 = client("ann1"), client("ann2")
    for cid in ("c-plant-1", "c-plant-2"):
        review(ann1, cid, loaded, "discard")
        review(ann2, cid, loaded, "discard")
        assert question(loaded, cid).status == "discarded"
    assert "img-plant" in ann1.get("/?image_status=needs_candidates").text
    manifest = export_dataset(loaded, workspace.root / "out" / "d.jsonl").manifest
    assert json.loads(manifest.read_text())["images_needing_candidates"] == ["img-plant"]

    fresh = write_jsonl(
        workspace.root / "more.jsonl",
        [candidate_row("c-plant-3", "plant", "How big does this plant grow?")],
    )
    import_files(loaded, [fresh])
    assert question(loaded, "c-plant-3").round == 2  # the image's next round
    assert "img-plant" not in ann1.get("/?image_status=needs_candidates").text
    assert "img-plant" in ann1.get("/?image_status=in_review").text


def test_disagreement_is_adjudicated_and_accepted_by_two(client: Any, loaded: Database) -> None:
    review(client("ann1"), "c-dish-1", loaded, "accept")
    review(client("ann2"), "c-dish-1", loaded, "discard")
    assert question(loaded, "c-dish-1").status == "adjudication"
    adj = client("adj")
    queue = adj.get("/adjudication").text
    assert "c-dish-1" in queue
    assert "c-dish-2" not in queue
    page = adj.get(f"/questions/{question(loaded, 'c-dish-1').id}").text
    assert "reviewers disagree: accept vs discard" in page
    assert "ann1" in page
    assert "ann2" in page
    assert rule(adj, "c-dish-1", loaded, "accept").status_code == 303
    assert question(loaded, "c-dish-1").status == "accepted"


def test_adjudicated_revision_re_enters_the_next_round(client: Any, loaded: Database) -> None:
    review(client("ann1"), "c-dish-2", loaded, "accept")
    review(
        client("ann2"),
        "c-dish-2",
        loaded,
        "revise",
        "Where is this dish from, and how is it eaten?",
    )
    rule(
        client("adj"),
        "c-dish-2",
        loaded,
        "revise",
        "Where does this dish come from, and how do people eat it?",
    )
    parent = question(loaded, "c-dish-2")
    assert parent.status == "revised"
    text = "Where does this dish come from, and how do people eat it?"
    child_id = (
        f"img-dish-v{hashlib.sha256(text.encode()).hexdigest()[:10]}"  # as gamut build names it
    )
    child = question(loaded, child_id)
    assert (child.round, child.parent_id, child.status) == (2, parent.id, "pending")
    assert child.text == "Where does this dish come from, and how do people eat it?"
    ann3 = client("ann3")
    assert ann3.get("/review/next").headers["location"].startswith("/questions/")
    review(ann3, child_id, loaded, "accept")
    review(client("ann1"), child_id, loaded, "accept")
    assert question(loaded, child_id).status == "accepted"


def test_agreeing_revisions_re_enter_without_adjudication(client: Any, loaded: Database) -> None:
    review(
        client("ann1"),
        "c-clock-1",
        loaded,
        "revise",
        "What clock is this, and how does it keep time?",
    )
    review(
        client("ann2"),
        "c-clock-1",
        loaded,
        "revise",
        "  What clock is this,\nand how does it keep time? ",
    )
    assert question(loaded, "c-clock-1").status == "revised"
    child = question(
        loaded,
        revision_id("img-clock", "c-clock-1", "What clock is this, and how does it keep time?"),
    )
    assert child.round == 2


def test_different_revisions_go_to_the_adjudicator(client: Any, loaded: Database) -> None:
    review(client("ann1"), "c-clock-1", loaded, "revise", "What clock is this?")
    review(client("ann2"), "c-clock-1", loaded, "revise", "How does this clock keep time?")
    assert question(loaded, "c-clock-1").status == "adjudication"
    adj = client("adj")
    assert (
        "both revise, with different texts"
        in adj.get(f"/questions/{question(loaded, 'c-clock-1').id}").text
    )
    rule(adj, "c-clock-1", loaded, "revise", "How does this clock keep time?")
    child = question(
        loaded, revision_id("img-clock", "c-clock-1", "How does this clock keep time?")
    )
    assert child.text == "How does this clock keep time?"


def test_adjudicator_must_side_with_a_reviewer(client: Any, loaded: Database) -> None:
    review(client("ann1"), "c-dish-1", loaded, "accept")
    review(client("ann2"), "c-dish-1", loaded, "discard")
    response = rule(client("adj"), "c-dish-1", loaded, "revise", "Something else entirely?")
    assert response.status_code == 422
    assert "side with one reviewer: choose accept or discard" in response.text
    assert question(loaded, "c-dish-1").status == "adjudication"


def test_only_a_third_person_with_the_role_adjudicates(
    client: Any, loaded: Database, db: Database
) -> None:
    review(client("ann1"), "c-dish-1", loaded, "accept")
    review(client("adj"), "c-dish-1", loaded, "discard")  # adjudicators may review too
    qid = question(loaded, "c-dish-1").id
    assert 'id="adjudicate-form"' not in client("adj").get(f"/questions/{qid}").text
    assert 'id="adjudicate-form"' in client("admin").get(f"/questions/{qid}").text
    ann3 = client("ann3")
    assert ann3.get("/adjudication").status_code == 403
    assert rule(ann3, "c-dish-1", loaded, "accept").status_code == 403
    response = rule(client("adj"), "c-dish-1", loaded, "accept")
    assert response.status_code == 403
    assert "a third person must adjudicate" in response.text
    assert rule(client("admin"), "c-dish-1", loaded, "discard").status_code == 303
    assert question(loaded, "c-dish-1").status == "discarded"


def test_a_review_is_final_and_a_third_review_is_refused(client: Any, loaded: Database) -> None:
    ann1 = client("ann1")
    review(ann1, "c-dish-1", loaded, "accept")
    again = review(ann1, "c-dish-1", loaded, "discard")
    assert again.status_code == 409
    assert "already reviewed" in again.text
    review(client("ann2"), "c-dish-1", loaded, "accept")
    late = review(client("ann3"), "c-dish-1", loaded, "discard")
    assert late.status_code == 409
    assert "no longer open for review" in late.text
    with loaded.read() as session:
        assert len(session.scalars(select(Review)).all()) == 2


def test_a_revision_needs_a_new_text(client: Any, loaded: Database) -> None:
    ann1 = client("ann1")
    assert "needs the revised question text" in review(ann1, "c-dish-1", loaded, "revise", " ").text
    same = review(
        ann1, "c-dish-1", loaded, "revise", "What is this dish, and how is it usually made?"
    )
    assert same.status_code == 422
    assert "same as the original" in same.text
    assert review(ann1, "c-dish-1", loaded, "maybe").status_code == 422


def test_a_reviewer_never_sees_the_other_decision(client: Any, loaded: Database) -> None:
    review(client("ann1"), "c-dish-1", loaded, "revise", "ZEBRA revision of the dish question?")
    qid = question(loaded, "c-dish-1").id
    ann2 = client("ann2")
    assert ann2.get("/review/next").headers["location"] == f"/questions/{qid}"
    for path in (f"/questions/{qid}", "/", "/adjudication"):
        page = ann2.get(path).text
        assert "ZEBRA" not in page
        assert "ann1" not in page.replace("ann1</td><td>annotator", "")


def test_stale_ruling_is_a_conflict_naming_who_ruled(client: Any, loaded: Database) -> None:
    review(client("ann1"), "c-dish-1", loaded, "accept")
    review(client("ann2"), "c-dish-1", loaded, "discard")
    seen = question(loaded, "c-dish-1").version  # both adjudicators open the page now
    adj, admin = client("adj"), client("admin")
    qid = question(loaded, "c-dish-1").id
    assert (
        adj.post(
            f"/questions/{qid}/adjudicate", {"decision": "accept", "version": seen}
        ).status_code
        == 303
    )
    late = admin.post(f"/questions/{qid}/adjudicate", {"decision": "discard", "version": seen})
    assert late.status_code == 409
    assert "changed since you opened it" in late.text
    assert "by adj" in late.text
    assert question(loaded, "c-dish-1").status == "accepted"


def test_simultaneous_reviews_never_make_a_third(loaded: Database) -> None:
    qid = question(loaded, "c-dish-1").id
    with loaded.read() as session:
        users = [
            session.scalar(select(User).where(User.name == n))
            for n in ("ann1", "ann2", "ann3", "adj")
        ]
    barrier = threading.Barrier(len(users))
    outcomes: list[str] = []

    def submit(user: Any) -> None:
        barrier.wait()
        try:
            with loaded.write() as session, session.begin():
                submit_review(session, qid, user, "accept", None, "")
            outcomes.append("saved")
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=submit, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict", "conflict", "saved", "saved"]
    assert question(loaded, "c-dish-1").status == "accepted"


def test_dashboard_kappa_and_work(client: Any, loaded: Database) -> None:
    ann1, ann2 = client("ann1"), client("ann2")
    plan = {
        "c-dish-1": ("accept", "accept"),
        "c-dish-2": ("accept", "discard"),
        "c-plant-1": ("discard", "discard"),
        "c-clock-1": ("revise", "revise"),
    }
    for cid, (first, second) in plan.items():
        review(ann1, cid, loaded, first, "A better question about the clock?")
        review(ann2, cid, loaded, second, "A better question about the clock?")
    # p_o = 3/4; marginals first a2 d1 r1, second a1 d2 r1: p_e = (2 + 2 + 1) / 16.
    expected = (0.75 - 5 / 16) / (1 - 5 / 16)
    with loaded.read() as session:
        measured = agreement(session)
    first = [a for a, _ in plan.values()]
    assert (
        measured.kappa
        == pytest.approx(expected)
        == pytest.approx(cohen_kappa(first, [b for _, b in plan.values()]))
    )
    assert measured.n == 4
    assert measured.matrix[0] == [1, 0, 1]
    page = ann1.get("/").text
    assert f"<strong>{expected:.3f}</strong>" in page
    assert "<td>ann1</td><td>annotator</td><td>4</td><td>0</td><td>0</td>" in page
