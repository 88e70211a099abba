"""The app under hostile requests, on SQLite and PostgreSQL: forwarded headers believed only
from named proxies, sign-in backoff per name and per address (no bypass, no lock-out), any
bad id a 404 with the security headers, and import files with NUL characters refused
(docs/reliability.md E19, D20)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import BASE_URL, Client, Workspace, candidate_row, write_jsonl
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from gamut_eval.annotate import Database, _users, create_app, import_files
from gamut_eval.annotate._db import LoginFailure, Question
from gamut_eval.annotate._users import ADDRESS_FREE_FAILURES, ANY_NAME, FREE_FAILURES
from gamut_eval.annotate._web import SECURITY_HEADERS
from gamut_eval.cli import cli
from gamut_eval.errors import ValidationError

PROXY = "10.0.0.1"


def _attempt(app: Any, address: str, name: str, token: str, forwarded: str = "") -> Any:
    http = TestClient(app, base_url=BASE_URL, follow_redirects=False, client=(address, 40000))
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    page = http.get("/login", headers=headers)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert csrf
    form = {"name": name, "token": token, "csrf_token": csrf[1]}
    return http.post("/login", data=form, headers=headers)


@pytest.fixture
def long_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block lasts an hour: what is blocked stays blocked however slow the test runs."""

    def delay_after(failures: int, free: int = FREE_FAILURES) -> float:
        return 0.0 if failures < free else 3600.0

    monkeypatch.setattr(_users, "delay_after", delay_after)


def _failures(db: Database) -> list[tuple[str, str, int]]:
    with db.read() as session:
        rows = session.scalars(select(LoginFailure)).all()
        return sorted((r.name, r.address, r.failures) for r in rows)


@pytest.mark.usefixtures("long_blocks")
def test_a_forged_forwarded_header_does_not_bypass_the_backoff(
    loaded: Database, tokens: dict[str, str]
) -> None:
    app = create_app(loaded)  # no --forwarded-allow-ips: no client is a proxy
    for number in range(FREE_FAILURES):
        forged = f"203.0.113.{number}"
        assert _attempt(app, "127.0.0.1", "ann1", "guess", forged).status_code == 401
    blocked = _attempt(app, "127.0.0.1", "ann1", tokens["ann1"], "203.0.113.99")
    assert blocked.status_code == 429
    # Every failure was counted against the connection's own address, not the header's.
    assert _failures(loaded) == [(ANY_NAME, "127.0.0.1", 3), ("ann1", "127.0.0.1", 3)]


@pytest.mark.usefixtures("long_blocks")
def test_behind_a_named_proxy_one_client_cannot_lock_another_out(
    loaded: Database, tokens: dict[str, str]
) -> None:
    app = create_app(loaded, forwarded_allow_ips=[PROXY])
    attacker, user = "198.51.100.7", "198.51.100.8"
    for _ in range(FREE_FAILURES + 2):
        _attempt(app, PROXY, "ann1", "guess", attacker)
    assert _attempt(app, PROXY, "ann1", tokens["ann1"], attacker).status_code == 429
    # The user behind the same proxy signs in at once: their address is their own.
    assert _attempt(app, PROXY, "ann1", tokens["ann1"], user).status_code == 303
    # A client that is not the named proxy cannot pick an address with the header.
    _attempt(app, "10.0.0.2", "ann2", "guess", user)
    assert ("ann2", "10.0.0.2", 1) in _failures(loaded)
    assert ("ann2", user, 1) not in _failures(loaded)


@pytest.mark.usefixtures("long_blocks")
def test_trying_many_names_from_one_address_is_slowed_down_too(
    loaded: Database, tokens: dict[str, str]
) -> None:
    app = create_app(loaded)
    here = "10.0.0.7"
    for number in range(ADDRESS_FREE_FAILURES):
        # A new name each time: no (name, address) pair gets past its free failures.
        response = _attempt(app, here, f"name{number}", "guess")
        assert response.status_code == 401
    assert "Wait 3600 s before the next try." in response.text
    blocked = _attempt(app, here, "ann2", tokens["ann2"])
    assert (blocked.status_code, blocked.headers["retry-after"]) == (429, "3600")
    # Another address is not affected.
    assert _attempt(app, "10.0.0.8", "ann2", tokens["ann2"]).status_code == 303


@pytest.mark.parametrize(
    "path",
    [
        "/rubrics/99999999999999999999",
        "/rubrics/2147483648",
        "/rubrics/-1",
        "/rubrics/abc",
        "/rubrics/1e3",
        "/questions/99999999999999999999",
        "/questions/%2D1",
        "/rubrics/999999999",
    ],
)
def test_any_bad_id_is_a_404_with_the_security_headers(client: Any, path: str) -> None:
    admin = client("admin")
    for response in (admin.get(path), admin.post(path + "/complete", {"version": "1"})):
        assert response.status_code == 404, (path, response.status_code)
        for name, value in SECURITY_HEADERS:
            assert response.headers[name] == value


def test_a_server_error_carries_the_security_headers(
    loaded: Database, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gamut_eval.annotate import _pages

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_pages._Rubric, "page", broken)
    admin = Client(loaded).login(tokens["admin"], "admin")
    admin.http = TestClient(
        admin.http.app,
        base_url=BASE_URL,
        follow_redirects=False,
        raise_server_exceptions=False,
        cookies=admin.http.cookies,
    )
    response = admin.get("/rubrics/1")
    assert response.status_code == 500
    for name, value in SECURITY_HEADERS:
        assert response.headers[name] == value


def test_an_import_file_with_a_nul_character_is_refused_naming_the_field(
    db: Database, workspace: Workspace
) -> None:
    rows = [
        candidate_row("ok-1", "dish", "A fine question?"),
        candidate_row("nul-1", "dish", "Which dish\u0000 is this?"),
        {**candidate_row("nul-2", "dish", "Q?"), "meta\u0000": 1},
    ]
    path = write_jsonl(workspace.root / "nul.jsonl", rows)
    assert b"\\u0000" in path.read_bytes()
    with pytest.raises(ValidationError) as caught:
        import_files(db, [path])
    assert [(d.file, d.path, d.rule) for d in caught.value.details] == [
        (f"{path}:2", "question", "nul-character"),
        (f"{path}:3", "$", "nul-character"),
    ]
    with db.read() as session:
        assert session.scalar(select(func.count(Question.id))) == 0  # nothing written


def test_the_import_command_refuses_a_nul_character_in_one_line_per_problem(
    db: Database, workspace: Workspace
) -> None:
    row = candidate_row("nul-1", "dish", "Which dish\u0000 is this?")
    path = write_jsonl(workspace.root / "nul.jsonl", [row])
    result = CliRunner().invoke(cli, ["annotate", "import", str(path), "--db", db.url])
    assert result.exit_code == 2, result.output
    assert f"{path}:1:question: holds a NUL character" in result.output
    assert "Traceback" not in result.output
    with db.read() as session:
        assert session.scalar(select(func.count(Question.id))) == 0


def test_serve_passes_the_trusted_proxies_to_the_app_and_not_to_uvicorn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(app=app, **kw))
    db = str(tmp_path / "a.sqlite")
    args = ["annotate", "serve", "--db", db, "--forwarded-allow-ips", "10.0.0.1, 10.0.0.2"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert seen["proxy_headers"] is False  # uvicorn's own trust of 127.0.0.1 is off
    [proxy] = [m for m in seen["app"].user_middleware if m.cls.__name__ == "ProxyHeadersMiddleware"]
    assert proxy.kwargs == {"trusted_hosts": ["10.0.0.1", "10.0.0.2"]}
    seen.clear()
    assert CliRunner().invoke(cli, ["annotate", "serve", "--db", db]).exit_code == 0
    names = [m.cls.__name__ for m in seen["app"].user_middleware]
    assert "ProxyHeadersMiddleware" not in names
    assert seen["proxy_headers"] is False
