"""The editing conveniences in a real browser: text areas that grow with their text, the
review keys (a / r / d, Ctrl+Enter), and the conflict view of two people saving one check."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from annotate_helpers import IMAGES, candidate_row, rubric_row, write_jsonl
from playwright.sync_api import Browser
from sqlalchemy import select
from test_annotate_browser import Server, running_app, sign_in

from gamut_eval.annotate import Database, Role, add_user, import_files
from gamut_eval.annotate._db import Review, Rubric
from gamut_eval.annotate._rubrics import checklist_of
from gamut_eval.data import sample_dir
from gamut_eval.rubric import Tier

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("browser-ux")
    (root / "images").mkdir()
    for name in IMAGES.values():
        shutil.copy(sample_dir() / "images" / name, root / "images" / name)
    db = Database.open(root / "annotate.sqlite")
    candidates = [
        candidate_row("c-dish-1", "dish", "What is this dish, and how is it usually made?"),
        candidate_row("c-plant-1", "plant", "What plant is this and how do you care for it?"),
    ]
    import_files(db, [write_jsonl(root / "candidates.jsonl", candidates)])
    import_files(db, [write_jsonl(root / "rubrics.jsonl", [rubric_row()])])
    roles = {"ann1": Role.ANNOTATOR, "ann2": Role.ANNOTATOR, "adj": Role.ADJUDICATOR}
    tokens = {name: add_user(db, name, role).token for name, role in roles.items()}
    with running_app(root, db, tokens) as running:
        yield running


IDENTITY = "textarea[aria-label='text of identity']"


def test_text_areas_grow_and_shrink_with_their_text(browser: Browser, server: Server) -> None:
    session = sign_in(browser, server, "ann1")
    page = session.page
    page.goto("/rubrics/1")
    area = page.locator(IDENTITY)
    short = area.evaluate("a => a.offsetHeight")
    assert area.evaluate("a => a.scrollHeight <= a.clientHeight + 1")  # all text visible
    page.fill(IDENTITY, " ".join(["A long statement of what the answer must say."] * 12))
    tall = area.evaluate("a => a.offsetHeight")
    assert tall > short + 60
    assert area.evaluate("a => a.scrollHeight <= a.clientHeight + 1")  # still no scrolling
    page.fill(IDENTITY, "Short.")
    assert area.evaluate("a => a.offsetHeight") < tall
    assert session.dialogs == []
    session.context.close()


def test_review_keys_choose_the_decision_and_submit(browser: Browser, server: Server) -> None:
    session = sign_in(browser, server, "ann1")
    page = session.page
    page.goto("/review/next")
    hint = page.inner_text("#review-form .shortcuts")
    assert "a accept" in hint
    assert "r revise" in hint
    assert "d discard" in hint
    assert "Ctrl+Enter submit" in hint
    page.keyboard.press("d")
    assert page.is_checked("input[name=decision][value=discard]")
    page.keyboard.press("a")
    assert page.is_checked("input[name=decision][value=accept]")
    page.keyboard.press("r")
    assert page.is_checked("input[name=decision][value=revise]")
    assert page.evaluate("() => document.activeElement.id") == "revised_text"
    page.keyboard.type("What is this dish called, and what goes into it?")  # typing: no keys
    assert page.is_checked("input[name=decision][value=revise]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("text=Your review was saved.")
    with server.db.read() as db_session:
        review = db_session.scalars(select(Review).where(Review.question_id == 1)).one()
    assert (review.decision, review.revised_text) == (
        "revise",
        "What is this dish called, and what goes into it?",
    )
    assert session.dialogs == []
    session.context.close()


def test_a_conflict_shows_both_versions_and_the_refused_edit_can_be_used(
    browser: Browser, server: Server
) -> None:
    first, second = sign_in(browser, server, "ann1"), sign_in(browser, server, "ann2")
    for s in (first, second):
        s.page.goto("/rubrics/1")  # both open the same version
    first.page.fill(IDENTITY, "Names the dish: bibimbap.")
    first.page.click("#checklist-form button[type=submit]")
    first.page.wait_for_selector("text=The checklist was saved.")

    page = second.page
    page.fill(IDENTITY, "Says it is bibimbap, a Korean rice dish.")
    page.select_option("select[aria-label='tier of core/item-2']", "context")
    page.click("#checklist-form button[type=submit]")
    page.wait_for_selector("#conflicts")
    assert "NOT saved" in page.inner_text(".errors")
    row = page.locator("#conflicts tr.conflict[data-check='identity']")
    assert "Names the dish: bibimbap." in row.locator("td.theirs").inner_text()
    assert "by ann1" in row.locator("td.theirs").inner_text()
    assert "Says it is bibimbap, a Korean rice dish." in row.locator("td.mine").inner_text()
    # The editor holds the saved text for the conflict, and the other edit is kept.
    assert page.input_value(IDENTITY) == "Names the dish: bibimbap."
    assert page.input_value("select[aria-label='tier of core/item-2']") == "context"
    row.locator("button.use-mine").click()
    assert page.input_value(IDENTITY) == "Says it is bibimbap, a Korean rice dish."
    page.click("#checklist-form button[type=submit]")
    page.wait_for_selector("text=The checklist was saved.")
    with server.db.read() as db_session:
        rubric = db_session.scalars(select(Rubric)).one()
        checks = checklist_of(rubric).by_id()
    assert checks["identity"].text == "Says it is bibimbap, a Korean rice dish."
    assert checks["core/item-2"].tier is Tier.CONTEXT
    for s in (first, second):
        assert s.dialogs == []
        s.context.close()
