"""docs/reliability.md E15-E17 through the HTTP API: sign-in, roles, CSRF, the Host check, the
security headers, and images served by content hash only (traversal gets 404 and no bytes)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from annotate_helpers import BASE_URL, PNG_MAGIC, Client, Workspace, image_url
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from gamut_eval.annotate import Database, create_app
from gamut_eval.annotate._db import LoginSession, Review
from gamut_eval.annotate._users import hash_token
from gamut_eval.annotate._web import CSP

CSP_EXPECTED = (
    "default-src 'self'; img-src 'self'; script-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)


def reviews(db: Database) -> int:
    with db.read() as session:
        return len(session.scalars(select(Review)).all())


def test_pages_and_posts_need_a_session(loaded: Database) -> None:
    anonymous = TestClient(create_app(loaded), base_url=BASE_URL, follow_redirects=False)
    dish = image_url("dish")
    for path in ("/", "/rubrics", "/rubrics/1", "/questions/1", dish, "/adjudication"):
        response = anonymous.get(path)
        assert (response.status_code, response.headers["location"]) == (303, "/login"), path
        assert PNG_MAGIC not in response.content
    response = anonymous.post("/questions/1/review", data={"decision": "accept", "csrf_token": "x"})
    assert response.status_code == 401
    assert reviews(loaded) == 0


def test_sign_in_sets_a_strict_http_only_cookie(loaded: Database, tokens: dict[str, str]) -> None:
    c = Client(loaded)
    page = c.http.get("/login")
    login_cookie = page.headers["set-cookie"].lower()
    assert "httponly" in login_cookie
    assert "samesite=strict" in login_cookie
    csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    bad = c.http.post("/login", data={"token": "not-a-token", "csrf_token": csrf})
    assert bad.status_code == 401
    assert "do not match a user" in bad.text
    page = c.http.get("/login")
    csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    good = c.http.post("/login", data={"token": tokens["ann1"], "csrf_token": csrf})
    assert good.status_code == 303
    cookie = good.headers["set-cookie"]
    assert "gamut_session=" in cookie
    assert "httponly" in cookie.lower()
    assert "samesite=strict" in cookie.lower()
    assert "Path=/" in cookie
    value = c.http.cookies["gamut_session"]
    with loaded.read() as session:  # the server keeps only the hash of the cookie
        stored = session.scalars(select(LoginSession.token_hash)).all()
    assert hash_token(value) in stored
    assert value not in stored


def test_sign_out_and_expiry_end_the_session(client: Any, loaded: Database) -> None:
    c = client("ann1")
    cookie = c.http.cookies["gamut_session"]
    assert c.post("/logout").headers["location"] == "/login"
    replay = TestClient(create_app(loaded), base_url=BASE_URL, follow_redirects=False)
    replay.cookies.set("gamut_session", cookie)
    assert replay.get("/").status_code == 303  # a copied cookie is worthless after sign-out
    other = client("ann2")
    with loaded.write() as session, session.begin():
        session.execute(update(LoginSession).values(expires_at="2000-01-01T00:00:00.000000Z"))
    assert other.get("/").headers["location"] == "/login"


def test_every_post_needs_this_sessions_csrf_token(client: Any, loaded: Database) -> None:
    ann1, ann2 = client("ann1"), client("ann2")
    form = {"decision": "accept"}
    assert ann1.http.post("/questions/1/review", data=form).status_code == 403
    assert (
        ann1.http.post("/questions/1/review", data={**form, "csrf_token": "forged"}).status_code
        == 403
    )
    stolen = ann1.http.post("/questions/1/review", data={**form, "csrf_token": ann2.csrf})
    assert stolen.status_code == 403
    assert "CSRF" in stolen.text
    assert ann1.http.post("/logout", data={}).status_code == 403
    assert ann1.http.post("/rubrics/1/drop", data={"version": 1, "reason": "x"}).status_code == 403
    cross = ann1.post("/questions/1/review", form, headers={"origin": "http://evil.example"})
    assert cross.status_code == 403
    assert reviews(loaded) == 0
    assert ann1.post("/questions/1/review", form, headers={"origin": BASE_URL}).status_code == 303
    assert reviews(loaded) == 1


def test_login_itself_needs_the_login_forms_token(loaded: Database, tokens: dict[str, str]) -> None:
    fresh = TestClient(create_app(loaded), base_url=BASE_URL, follow_redirects=False)
    forged = fresh.post("/login", data={"token": tokens["ann1"], "csrf_token": "guess"})
    assert forged.status_code == 403
    assert "gamut_session" not in forged.headers.get("set-cookie", "")


@pytest.mark.parametrize(
    ("base", "allowed"),
    [
        ("http://127.0.0.1:8700", True),
        ("http://localhost:8700", True),
        ("http://[::1]:8700", True),
        ("http://attacker.example:8700", False),  # DNS rebinding: a foreign name on our address
        ("http://127.0.0.1.nip.io:8700", False),
        ("http://annotate.lab", True),  # named with --allow-host
    ],
)
def test_host_header_allow_list(loaded: Database, base: str, allowed: bool) -> None:
    app = create_app(loaded, hosts=["annotate.lab"], bind_host="0.0.0.0")
    response = TestClient(app, base_url=base, follow_redirects=False).get("/login")
    assert response.status_code == (200 if allowed else 400)
    assert response.headers["content-security-policy"] == CSP_EXPECTED


def test_security_headers_on_every_response(client: Any) -> None:
    assert CSP == CSP_EXPECTED
    c = client("ann1")
    dish = image_url("dish")
    for path in ("/", "/login", "/rubrics/1", "/static/app.css", "/no/such/page", dish):
        response = c.get(path)
        assert response.headers["content-security-policy"] == CSP_EXPECTED, path
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
    assert c.get("/").headers["cache-control"] == "no-store"
    assert c.get("/docs").status_code == 404
    assert c.get("/openapi.json").status_code == 404


def raw_request(
    app: Any,
    raw_path: str,
    cookie: str,
    *,
    method: str = "GET",
    form: str = "",
    on_start: Callable[[], None] | None = None,
) -> tuple[int, bytes]:
    """A request with the path exactly as given (HTTP clients would normalise ``../``),
    decoded the way uvicorn decodes it; ``on_start`` runs when the response starts."""
    path, _, query = raw_path.partition("?")
    headers = [(b"host", b"127.0.0.1:8700"), (b"cookie", f"gamut_session={cookie}".encode())]
    if form:
        headers.append((b"content-type", b"application/x-www-form-urlencoded"))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote(path),
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8700),
        "headers": headers,
    }
    messages: list[dict[str, Any]] = []
    requests = [{"type": "http.request", "body": form.encode(), "more_body": False}]

    async def run() -> None:
        done = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if requests:
                return requests.pop()
            await done.wait()  # like a client that stays connected until the body is sent
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)
            if message["type"] == "http.response.start" and on_start is not None:
                on_start()
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await asyncio.wait_for(app(scope, receive, send), timeout=10)

    asyncio.run(run())
    status = next(m["status"] for m in messages if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return status, body


def test_a_change_is_committed_before_the_response_starts(client: Any, loaded: Database) -> None:
    """A browser follows the redirect at once: it must see the change (and a failed commit
    must never have answered "saved"). TestClient waits for the whole app, so this test
    watches the moment the response starts."""
    c = client("ann1")
    seen: list[int] = []
    status, _ = raw_request(
        c.http.app,
        "/questions/1/review",
        c.http.cookies["gamut_session"],
        method="POST",
        form=f"decision=accept&csrf_token={c.csrf}",
        on_start=lambda: seen.append(reviews(loaded)),
    )
    assert status == 303
    assert seen == [1]


def traversal_paths(root: Path) -> list[str]:
    image = (root / "images" / "sample-bibimbap.png").resolve()
    return [
        "/images/../../../../etc/passwd",
        "/images/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/images/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/images/%252e%252e%252fetc%252fpasswd",
        "/images/..\\..\\annotate.sqlite",
        "/images//etc/passwd",
        "/images/%2Fetc%2Fpasswd",
        f"/images/{image}",
        f"/images/{str(image).replace('/', '%2F')}",
        "/images/1/../../annotate.sqlite",
        "/images/1%2f..%2f..%2fannotate.sqlite",
        "/images/images%2Fsample-bibimbap.png",
        "/images/sample-bibimbap.png",
        "/images?path=images/sample-bibimbap.png",
        "/images/1",  # row ids are no address
        "/images/999",
        "/images/-1",
        "/images/1.png",
        image_url("dish").upper().replace("/IMAGES/", "/images/"),
        image_url("dish") + ".png",
        image_url("dish") + "/../../annotate.sqlite",
        image_url("dish") + "%2f..%2f..%2fannotate.sqlite",
        "/images/" + "0" * 64,
        "/static/../_app.py",
        "/static/..%2f_app.py",
        "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        f"/static/{image}",
    ]


def test_images_by_hash_only_traversal_gets_404_and_no_bytes(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    c = client("ann1")
    app, cookie = c.http.app, c.http.cookies["gamut_session"]
    image_bytes = (workspace.root / "images" / "sample-bibimbap.png").read_bytes()
    status, body = raw_request(app, image_url("dish"), cookie)
    assert status == 200
    assert body == image_bytes
    assert image_url("dish") == f"/images/{hashlib.sha256(image_bytes).hexdigest()}"
    page = client("ann1").get("/questions/1").text
    assert f'src="{image_url("dish")}"' in page
    assert str(workspace.root) not in page  # no server path in the page
    for path in traversal_paths(workspace.root):
        status, body = raw_request(app, path, cookie)
        assert status == 404, path
        for leak in (PNG_MAGIC, b"root:", b"SQLite format", b"import "):  # no image, no file
            assert leak not in body, path


def test_an_image_whose_file_vanished_is_404(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    (workspace.root / "images" / "sample-bibimbap.png").unlink()
    assert client("ann1").get(image_url("dish")).status_code == 404


def test_an_image_whose_bytes_changed_is_404(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    """The address names the bytes: after the file is replaced it no longer serves them."""
    (workspace.root / "images" / "sample-bibimbap.png").write_bytes(b"\x89PNG other bytes")
    response = client("ann1").get(image_url("dish"))
    assert response.status_code == 404
    assert b"other bytes" not in response.content
