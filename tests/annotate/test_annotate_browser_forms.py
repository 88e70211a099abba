"""The review app on the bundled sample, in Chromium: an item edited through its form
(a row added, moved and saved, the compiled checks following each edit), the rubric
queue driven from the keyboard, and pages that fit a tablet and a phone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser
from test_annotate_browser import Server, running_app, sign_in

from gamut_eval.annotate import Database, Role, add_user, import_files
from gamut_eval.annotate._db import Rubric
from gamut_eval.data import sample_dir

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("browser-forms")
    db = Database.open(root / "annotate.sqlite")
    sample = sample_dir()
    import_files(db, [sample / "candidates.jsonl", sample / "dataset.jsonl"])
    tokens = {"ann1": add_user(db, "ann1", Role.ANNOTATOR).token}
    with running_app(root, db, tokens) as running:
        yield running


def _item(server: Server, record_id: str, item_id: str) -> dict[str, object]:
    with server.db.read() as session:
        rubric = session.query(Rubric).filter_by(record_id=record_id).one()
        meta = json.loads(rubric.meta_rubric)
    return dict(next(i for i in meta["items"] if i["id"] == item_id))


def test_an_item_form_adds_and_moves_a_row_with_a_live_preview(
    browser: Browser, server: Server, screenshots: Path
) -> None:
    page = sign_in(browser, server, "ann1").page
    page.goto("/rubrics/1")
    item = _item(server, "sample-bibimbap", "vegetables")
    options = [o if isinstance(o, str) else o["text"] for o in item["options"]]  # type: ignore[union-attr]
    editor = page.locator("details#item-vegetables")
    editor.locator("summary").click()
    rows = editor.locator("fieldset[data-prefix=el] .row")
    before = rows.count()
    assert before == len(options) + 1  # and a blank one
    editor.locator("fieldset[data-prefix=el] button.add-row").click()
    assert rows.count() == before + 1
    new = rows.nth(before).locator("textarea")
    new.fill("pickled radish")
    preview = editor.locator(".item-preview")
    preview.get_by_text("pickled radish").first.wait_for()
    assert new.get_attribute("name") == f"el-{before}-text"
    rows.nth(before).get_by_role("button", name="move up").click()
    assert rows.nth(before - 1).locator("textarea").input_value() == "pickled radish"
    assert rows.nth(before - 1).locator("textarea").get_attribute("name") == f"el-{before - 1}-text"
    editor.screenshot(path=str(screenshots / "annotate-item-form.png"))
    editor.locator("button[type=submit]").click()
    page.locator("text=The item was saved").wait_for()
    saved = _item(server, "sample-bibimbap", "vegetables")
    texts = [o if isinstance(o, str) else o["text"] for o in saved["options"]]  # type: ignore[union-attr]
    assert texts == [*options, "pickled radish"]  # the blank row moved below it is dropped


def test_the_queue_moves_with_n_and_p_but_not_while_typing(
    browser: Browser, server: Server
) -> None:
    page = sign_in(browser, server, "ann1").page
    page.goto("/rubrics/2")
    page.locator("#queue").wait_for()
    page.keyboard.press("n")
    page.wait_for_url("**/rubrics/3")
    page.keyboard.press("p")
    page.wait_for_url("**/rubrics/2")
    entity = page.locator("#entity-input")
    before = entity.input_value()
    entity.focus()
    page.keyboard.press("End")
    page.keyboard.press("n")
    assert page.url.endswith("/rubrics/2")
    assert entity.input_value() == before + "n"  # typed, not a move
    assert "round 1:" in page.locator("#progress").inner_text()


@pytest.mark.parametrize(("width", "height"), [(390, 844), (820, 1180), (1440, 900)])
def test_pages_fit_the_screen_without_sideways_scrolling(
    browser: Browser, server: Server, screenshots: Path, width: int, height: int
) -> None:
    session = sign_in(browser, server, "ann1")
    page = session.page
    page.set_viewport_size({"width": width, "height": height})
    for path in ("/", "/rubrics/1", "/review/next"):
        page.goto(path)
        page.wait_for_load_state("load")
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        name = path.strip("/").replace("/", "-") or "dashboard"
        page.screenshot(path=str(screenshots / f"annotate-{name}-{width}.png"))
        assert overflow <= 0, f"{path} at {width}px scrolls sideways by {overflow}px"


def test_no_server_path_is_shown(browser: Browser, server: Server) -> None:
    page = sign_in(browser, server, "ann1").page
    root = str(sample_dir().parent.parent)
    for path in ("/", "/rubrics/1", "/rubrics", "/review/next"):
        page.goto(path)
        assert root not in page.content(), path
