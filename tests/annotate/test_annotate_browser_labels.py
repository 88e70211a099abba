"""Labelling an answer in Chromium from the keyboard: 1-4 give the check in focus its
verdict and move to the next, digits typed in the note stay text, Ctrl+Enter saves."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser
from sqlalchemy import select
from test_annotate_browser import Server, running_app, sign_in

from gamut_eval.annotate import Database, Role, add_user, import_answers
from gamut_eval.annotate._db import AnswerLabel, LabelAnswer, LabelQuestion
from gamut_eval.data import sample_dir
from gamut_eval.rubric import Checklist

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("browser-labels")
    # A run folder as far as the import reads it (the browser's event loop is running, so
    # `gamut run` cannot run here; the other tests import a real run).
    run = root / "RUN"
    run.mkdir()
    shutil.copy(sample_dir() / "responses.jsonl", run / "responses.jsonl")
    (run / "run.json").write_text(json.dumps({"dataset": str(sample_dir() / "dataset.jsonl")}))
    (root / "sample.txt").write_text("sample-espresso\n")
    db = Database.open(root / "annotate.sqlite")
    import_answers(db, root / "RUN", root / "sample.txt")
    tokens = {"ann1": add_user(db, "ann1", Role.ANNOTATOR).token}
    with running_app(root, db, tokens) as running:
        yield running


def test_one_answer_labelled_with_the_keyboard(browser: Browser, server: Server) -> None:
    with server.db.read() as session:
        first = session.scalars(select(LabelAnswer).order_by(LabelAnswer.id)).first()
        assert first is not None
        question = session.get(LabelQuestion, first.question_id)
        assert question is not None
        checks = Checklist.model_validate_json(question.checklist).checks
    page = sign_in(browser, server, "ann1").page
    page.click("nav >> text=Label answers")
    page.wait_for_url(f"**/labels/{first.id}")
    progress = page.locator("#label-progress")
    assert progress.inner_text().strip() == "0 of 6 answers labelled (by you)"
    assert page.locator("#answer-text").inner_text().startswith(first.response[:40])
    keys = ["1", "2", "3", "4"]
    wanted = {c.id: ("meets", "partially_meets", "missing", "contradicts")[i % 4]
              for i, c in enumerate(checks)}  # fmt: skip
    for i in range(len(checks)):
        page.keyboard.press(keys[i % 4])
    for i, check in enumerate(checks):
        chosen = page.locator(f"#check-{i} input:checked")
        assert chosen.get_attribute("value") == wanted[check.id]
    page.click("#note")
    page.keyboard.type("3 and 4 were close")
    page.keyboard.press("Control+Enter")
    page.locator("text=Your verdicts were saved.").wait_for()
    assert progress.inner_text().strip() == "1 of 6 answers labelled (by you)"
    with server.db.read() as session:
        label = session.scalars(select(AnswerLabel).where(AnswerLabel.answer_id == first.id)).one()
    assert json.loads(label.verdicts) == wanted  # the digits typed in the note changed nothing
    assert label.note == "3 and 4 were close"
    assert label.completed_at is not None
    # On the next answer, n moves on from a radio button (letters are not typed into it).
    second = page.url.split("?")[0]
    page.keyboard.press("4")
    assert page.evaluate("document.activeElement.name") == "verdict-1"
    page.keyboard.press("n")
    page.wait_for_url(lambda url: url.split("?")[0] != second)
    assert page.url.endswith(f"/labels/{first.id + 2}")
