"""The app in a real browser (Debian's chromium through Playwright) against a real uvicorn
server: a whole review round, a rubric revision, XSS payloads that must stay inert, and
traversal attempts that must get no bytes."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from annotate_helpers import (
    IMAGES,
    KIMCHI,
    NEW_IDENTITY,
    PNG_MAGIC,
    RUBRIC,
    candidate_row,
    expected_checklist,
    image_url,
    rubric_row,
    write_jsonl,
)
from playwright.sync_api import Browser, BrowserContext, Page

from gamut_eval.annotate import Database, Role, add_user, create_app, export_dataset, import_files
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset

pytestmark = pytest.mark.browser

XSS = (
    "<script>window.__xss='script';alert('script')</script>"
    "<img src=x onerror=\"window.__xss='onerror';alert('onerror')\">"
    "<a href=\"javascript:window.__xss='link';alert('link')\">click me</a>"
    "<a href=\"data:text/html,<script>alert('data')</script>\">data link</a>"
)
"""Markup that would run script if it were rendered as HTML instead of text."""
BREAKOUT = "\"><script>window.__xss='attribute';alert('attribute')</script>"
"""Closes an attribute value first: tests escaping of quotes inside input values."""
JS_SOURCE = "javascript:window.__xss='source';alert('source')"
"""An evidence source that would be a script link if it were made a link."""


@dataclass
class Server:
    url: str
    root: Path
    db: Database
    tokens: dict[str, str]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _hostile_rubric() -> dict[str, Any]:
    rubric = json.loads(json.dumps(RUBRIC))
    rubric["id"] = "q-xss"
    rubric["entity"] = BREAKOUT
    rubric["question"] = XSS
    rubric["items"][0]["statement"] = XSS
    rubric["items"][2]["options"][0] = "<svg onload=\"window.__xss='svg';alert('svg')\">"
    rubric["evidence"] = [
        {
            "id": "s1",
            "text": XSS,
            "source": "javascript:window.__xss='source';alert('source')",
            "title": XSS,
        },
        {
            "id": "s2",
            "text": "data",
            "source": "data:text/html,<script>alert('data-source')</script>",
        },
    ]
    return rubric


def _seed(root: Path, db: Database) -> dict[str, str]:
    (root / "images").mkdir()
    for name in IMAGES.values():
        shutil.copy(sample_dir() / "images" / name, root / "images" / name)
    candidates = [
        candidate_row("c-dish-1", "dish", "What is this dish, and how is it usually made?"),
        candidate_row("c-xss", "plant", XSS),
        {**candidate_row("c-xss-2", "clock", "Which clock is this " + BREAKOUT), "entity": XSS},
    ]
    hostile = rubric_row(_hostile_rubric(), metadata={}, entity=BREAKOUT, question=XSS)
    import_files(db, [write_jsonl(root / "candidates.jsonl", candidates)])
    import_files(db, [write_jsonl(root / "rubrics.jsonl", [rubric_row(), hostile])])
    roles = {
        "ann1": Role.ANNOTATOR,
        "ann2": Role.ANNOTATOR,
        "ann3": Role.ANNOTATOR,
        "adj": Role.ADJUDICATOR,
    }
    return {name: add_user(db, name, role).token for name, role in roles.items()}


@contextmanager
def running_app(root: Path, db: Database, tokens: dict[str, str]) -> Iterator[Server]:
    """The app on ``db``, served by uvicorn on a free local port until the block ends."""
    port = _free_port()
    config = uvicorn.Config(
        create_app(db), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uv.started, "uvicorn did not start"
    try:
        yield Server(f"http://127.0.0.1:{port}", root, db, tokens)
    finally:
        uv.should_exit = True
        thread.join(timeout=10)
        db.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("browser")
    db = Database.open(root / "annotate.sqlite")
    with running_app(root, db, _seed(root, db)) as running:
        yield running


@dataclass
class Session:
    context: BrowserContext
    page: Page
    dialogs: list[str]


def sign_in(browser: Browser, server: Server, name: str, *, bypass_csp: bool = False) -> Session:
    """A fresh browser profile signed in as ``name``; every dialog that opens is recorded."""
    context = browser.new_context(base_url=server.url, bypass_csp=bypass_csp)
    context.set_default_timeout(10_000)
    page = context.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto("/login")
    page.fill("#name", name)
    page.fill("#token", server.tokens[name])
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.url == f"{server.url}/"
    return Session(context, page, dialogs)


def test_a_review_round_and_a_rubric_revision_end_to_end(browser: Browser, server: Server) -> None:
    first = sign_in(browser, server, "ann1")
    first.page.click("text=Review the next question")
    assert "What is this dish, and how is it usually made?" in first.page.inner_text(
        "#question-text"
    )
    # The photo loads (by content hash): wait for it to finish, as a loaded machine may be
    # slower than the page's own load event, then check it decoded to real pixels.
    first.page.wait_for_function(
        "() => { const img = document.querySelector('figure.photo img');"
        " return img !== null && img.complete; }"
    )
    assert first.page.eval_on_selector("figure.photo img", "img => img.naturalWidth") > 0
    first.page.check("input[name=decision][value=accept]")
    first.page.click("#review-form button[type=submit]")
    assert "Your review was saved." in first.page.inner_text("main")

    second = sign_in(browser, server, "ann2")
    second.page.goto("/review/next")
    assert "What is this dish" in second.page.inner_text("#question-text")
    assert "ann1" not in second.page.inner_text("main")  # the first review stays hidden
    assert second.page.locator("table.grid").count() == 0
    second.page.check("input[name=decision][value=discard]")
    second.page.fill("#comment", "too generic")
    second.page.click("#review-form button[type=submit]")

    judge = sign_in(browser, server, "adj")
    judge.page.click("nav >> text=Adjudication")
    judge.page.click("text=c-dish-1")
    decisions = judge.page.inner_text("table.grid")
    assert "ann1" in decisions
    assert "ann2" in decisions
    assert "too generic" in decisions
    judge.page.check("#adjudicate-form input[name=decision][value=accept]")
    judge.page.click("#adjudicate-form button[type=submit]")
    assert "Your ruling was saved." in judge.page.inner_text("main")
    assert "accepted" in judge.page.inner_text("p.meta")

    editor = sign_in(browser, server, "ann3")
    editor.page.click("nav >> text=Rubrics")
    editor.page.click("text=q-dish")
    page = editor.page
    page.fill("textarea[aria-label='text of identity']", NEW_IDENTITY)
    page.select_option("select[aria-label='tier of core/item-2']", "valuable")
    page.check("input[aria-label='remove toppings/option-3']")
    page.select_option("select[aria-label='item of new check 1']", KIMCHI["item"])
    page.select_option("select[aria-label='kind of new check 1']", KIMCHI["kind"])
    page.select_option("select[aria-label='tier of new check 1']", KIMCHI["tier"])
    page.fill("textarea[aria-label='text of new check 1']", KIMCHI["text"])
    page.fill("#edit-comment", "second pass")
    page.click("#checklist-form button[type=submit]")
    assert "The checklist was saved." in page.inner_text("main")
    diff = page.inner_text("#diff")
    assert "+ toppings/added-1" in diff
    assert "- toppings/option-3" in diff

    out = server.root / "export" / "dataset.jsonl"
    export_dataset(server.db, out)
    records = {r.id: r for r in load_dataset(out)}
    assert records["q-dish"].checklist == expected_checklist()  # exactly the edits, nothing else
    note = records["q-dish"].metadata["annotation"]
    assert [(e["by"], e["action"]) for e in note["rubric"]["events"]][1:] == [("ann3", "checklist")]
    [history] = note["question_review"]
    assert [(r["by"], r["kind"], r["decision"]) for r in history["reviews"]] == [
        ("ann1", "review", "accept"),
        ("ann2", "review", "discard"),
        ("adj", "adjudication", "accept"),
    ]
    assert records["q-xss"].checklist == records["q-xss"].effective_checklist()  # untouched
    for session in (first, second, judge, editor):
        assert session.dialogs == []
        session.context.close()


def _assert_inert(session: Session, path: str) -> None:
    page = session.page
    page.goto(path)
    page.wait_for_load_state("load")
    assert page.evaluate("() => window.__xss") is None, path
    assert (
        page.evaluate(
            """() => document.querySelectorAll(
            'script:not([src="/static/app.js"]), svg, img[onerror], a[href^="javascript:" i],'
            + ' a[href^="data:" i], [onload]'
        ).length"""
        )
        == 0
    ), path
    scripts = page.eval_on_selector_all("script", "els => els.map(s => s.src)")
    assert scripts == [f"{page.url.split('/', 3)[0]}//{page.url.split('/', 3)[2]}/static/app.js"]
    links = page.eval_on_selector_all("a", "els => els.map(a => a.href)")
    assert all(link.startswith(("http://127.0.0.1", "https://")) for link in links), links
    assert session.dialogs == [], path


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["with-csp", "escaping-alone"])
def test_xss_payloads_stay_inert(browser: Browser, server: Server, bypass_csp: bool) -> None:
    xss_question = "/questions/2"
    reviewers = [sign_in(browser, server, name) for name in ("ann1", "ann2")]
    for reviewer, decision in zip(reviewers, ("revise", "discard"), strict=True):
        reviewer.page.goto(xss_question)  # the first run reviews; the second finds it done
        if reviewer.page.locator("#review-form").count():
            reviewer.page.check(f"input[name=decision][value={decision}]")
            reviewer.page.fill("#revised_text", XSS + " revised")
            reviewer.page.fill("#comment", BREAKOUT)
            reviewer.page.click("#review-form button[type=submit]")
    session = sign_in(browser, server, "adj", bypass_csp=bypass_csp)
    paths = [xss_question, "/questions/3", "/rubrics/2", "/rubrics", "/", "/adjudication"]
    for path in paths:
        _assert_inert(session, path)
    session.page.goto(xss_question)  # in adjudication: the reviews' texts are on the page
    assert XSS + " revised" in session.page.inner_text("table.grid")
    assert BREAKOUT in session.page.inner_text("table.grid")
    session.page.goto("/rubrics/2")
    assert XSS in session.page.inner_text("#question-text")  # shown, as text
    assert session.page.input_value("#entity-input") == BREAKOUT
    evidence = session.page.inner_text("#meta-rubric .evidence")
    assert "javascript:window.__xss='source'" in evidence
    session.page.click("text=click me")  # plain text now: clicking it does nothing
    assert session.page.evaluate("() => window.__xss") is None
    assert session.dialogs == []
    for reviewer in reviewers:
        assert reviewer.dialogs == []
        reviewer.context.close()
    session.context.close()


def test_csp_blocks_injected_inline_script(browser: Browser, server: Server) -> None:
    session = sign_in(browser, server, "ann1")
    response = session.page.goto("/")
    assert response is not None
    assert "script-src 'self'" in response.headers["content-security-policy"]
    ran = session.page.evaluate(
        """() => { const s = document.createElement('script');
                   s.textContent = 'window.__csp = 1'; document.body.appendChild(s);
                   return window.__csp; }"""
    )
    assert ran is None  # the policy refuses inline script even when it gets into the page
    session.context.close()


def _raw(server: Server, path: str, cookie: str) -> tuple[int, bytes]:
    """GET ``path`` byte for byte (a browser would normalise ``../`` before sending)."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", f"{host}:{port}")
        connection.putheader("Cookie", f"gamut_session={cookie}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_traversal_attempts_get_no_bytes(browser: Browser, server: Server) -> None:
    session = sign_in(browser, server, "ann1")
    cookie = next(c["value"] for c in session.context.cookies() if c["name"] == "gamut_session")
    image = (server.root / "images" / IMAGES["dish"]).resolve()
    status, body = _raw(server, image_url("dish"), cookie)
    assert status == 200
    assert body == image.read_bytes()
    attempts = [
        "/images/../../../../etc/passwd",
        "/images/..%2f..%2f..%2fetc%2fpasswd",
        "/images/%2e%2e%2f%2e%2e%2fannotate.sqlite",
        "/images/%252e%252e%252fannotate.sqlite",
        "/images//etc/passwd",
        f"/images/{image}",
        f"/images{image}",
        "/images/1/../../annotate.sqlite",
        "/images/1",
        image_url("dish") + "/../../annotate.sqlite",
        "/static/../annotate.sqlite",
        "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        f"/static/{image}",
    ]
    for path in attempts:
        status, body = _raw(server, path, cookie)
        assert status == 404, path
        for leak in (PNG_MAGIC, b"SQLite format", b"root:"):
            assert leak not in body, path
    for path in (
        "/images/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        f"/images/{str(image).replace('/', '%2F')}",
    ):
        response = session.page.goto(path)
        assert response is not None
        assert response.status == 404, path
        assert PNG_MAGIC not in response.body()
    session.context.close()
