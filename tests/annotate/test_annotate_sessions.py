"""Sessions end after an idle time (``gamut annotate serve --session-idle``), and repeated
failed sign-ins of one name from one address are slowed down (per name and address)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import BASE_URL, Client
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from gamut_eval.annotate import Database, create_app
from gamut_eval.annotate._db import LoginFailure, LoginSession
from gamut_eval.annotate._users import ANY_NAME, FREE_FAILURES, delay_after
from gamut_eval.cli import cli


def _ago(minutes: float) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _last_seen(db: Database) -> str | None:
    with db.read() as session:
        return session.scalars(select(LoginSession.last_seen_at)).one()


def _set_last_seen(db: Database, value: str) -> None:
    with db.write() as session, session.begin():
        session.execute(update(LoginSession).values(last_seen_at=value))


def test_a_session_idle_too_long_ends_and_activity_keeps_it(
    loaded: Database, tokens: dict[str, str]
) -> None:
    c = Client(loaded)
    c.http = TestClient(
        create_app(loaded, idle_minutes=30), base_url=BASE_URL, follow_redirects=False
    )
    c.login(tokens["ann1"], "ann1")
    _set_last_seen(loaded, _ago(29))  # active 29 minutes ago: still signed in
    assert c.get("/").status_code == 200
    seen = _last_seen(loaded)
    assert seen is not None
    assert seen > _ago(1)  # the request counted as activity
    _set_last_seen(loaded, _ago(31))
    assert c.get("/").headers["location"] == "/login"
    refused = c.post("/questions/1/review", {"decision": "accept"})
    assert refused.status_code == 401  # posts too: not signed in any more


def test_activity_is_written_at_most_once_a_minute(
    loaded: Database, tokens: dict[str, str]
) -> None:
    c = Client(loaded).login(tokens["ann1"], "ann1")
    recent = _ago(0.5)
    _set_last_seen(loaded, recent)
    assert c.get("/rubrics").status_code == 200
    assert _last_seen(loaded) == recent  # seen 30 s ago: not written again
    assert c.post("/logout").status_code == 303


def test_serve_passes_the_idle_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    apps: list[Any] = []
    monkeypatch.setattr("gamut_eval.annotate._app.uvicorn.run", lambda app, **kw: apps.append(app))
    db = str(tmp_path / "s.sqlite")
    result = CliRunner().invoke(cli, ["annotate", "serve", "--db", db, "--session-idle", "15"])
    assert result.exit_code == 0, result.output
    assert "sessions end after 15 idle minutes" in " ".join(result.stderr.split())
    assert apps[0].state.idle_minutes == 15
    CliRunner().invoke(cli, ["annotate", "serve", "--db", db])
    assert apps[1].state.idle_minutes == 60  # the default
    bad = CliRunner().invoke(cli, ["annotate", "serve", "--db", db, "--session-idle", "0"])
    assert bad.exit_code == 2
    assert "--session-idle" in bad.output


def _attempt(app: Any, address: str, name: str, token: str) -> Any:
    http = TestClient(app, base_url=BASE_URL, follow_redirects=False, client=(address, 40000))
    page = http.get("/login")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert csrf
    return http.post("/login", data={"name": name, "token": token, "csrf_token": csrf[1]})


def _unblock(db: Database) -> None:
    """As if the block had run out (instead of sleeping through it)."""
    with db.write() as session, session.begin():
        session.execute(update(LoginFailure).values(blocked_until=_ago(0.01)))


def test_repeated_failed_sign_ins_are_slowed_down_per_name_and_address(
    loaded: Database, tokens: dict[str, str]
) -> None:
    assert [delay_after(n) for n in range(1, 7)] == [0, 0, 1, 2, 4, 8]
    assert FREE_FAILURES == 3
    app = create_app(loaded)
    here, elsewhere = "10.0.0.7", "10.0.0.8"
    for _ in range(1, FREE_FAILURES):
        wrong = _attempt(app, here, "ann1", "guess")
        assert wrong.status_code == 401
        assert "do not match a user" in wrong.text
        assert "Wait" not in wrong.text  # the first failures cost nothing
    third = _attempt(app, here, "ann1", "guess")
    assert third.status_code == 401
    assert "Wait 1 s before the next try." in third.text
    # Blocked now: even the right token waits, and the token is not even looked at.
    blocked = _attempt(app, here, "ann1", tokens["ann1"])
    assert blocked.status_code == 429
    assert blocked.headers["retry-after"] == "1"
    assert "Too many failed sign-ins" in blocked.text
    assert "gamut_session" not in blocked.headers.get("set-cookie", "")
    # Another address, and another name from this address, are not slowed down.
    assert _attempt(app, elsewhere, "ann1", tokens["ann1"]).status_code == 303
    assert _attempt(app, here, "ann2", tokens["ann2"]).status_code == 303
    # Each further failure doubles the wait.
    _unblock(loaded)
    assert _attempt(app, here, "ann1", "guess").status_code == 401
    blocked = _attempt(app, here, "ann1", tokens["ann1"])
    assert (blocked.status_code, blocked.headers["retry-after"]) == (429, "2")
    # Once the wait is over the right token signs in and the count is forgotten.
    _unblock(loaded)
    assert _attempt(app, here, "ann1", tokens["ann1"]).status_code == 303
    # The pair's count is forgotten; the address keeps its own (4 failures: 2 + 1 + 1).
    with loaded.read() as session:
        rows = session.scalars(select(LoginFailure)).all()
    assert [(r.name, r.address, r.failures) for r in rows] == [(ANY_NAME, here, 4)]


def test_a_token_with_someone_elses_name_is_a_failure(
    loaded: Database, tokens: dict[str, str]
) -> None:
    app = create_app(loaded)
    assert _attempt(app, "10.0.0.9", "ann2", tokens["ann1"]).status_code == 401
    assert _attempt(app, "10.0.0.9", "ANN1", tokens["ann1"]).status_code == 303  # any case
    with loaded.read() as session:
        rows = session.scalars(select(LoginFailure).order_by(LoginFailure.name)).all()
    assert [(r.name, r.address, r.failures) for r in rows] == [
        (ANY_NAME, "10.0.0.9", 1),
        ("ann2", "10.0.0.9", 1),
    ]
