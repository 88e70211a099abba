"""The web layer's common ground: the security rules, what every route shares (the database
session, the signed-in viewer, CSRF, rendering), signing in and out, and the images.

Threat model (docs/reliability.md E15-E17). The app runs on an annotator's laptop or a
team server and shows untrusted text (model-written questions, rubric text, evidence from
the web). Attacks covered here: a web page in the same browser posting forms to the app
(CSRF: SameSite=Strict cookies plus a per-session token checked on every POST), a hostile
domain re-pointed at 127.0.0.1 (DNS rebinding: the ``Host`` header must be one we serve),
and injected markup (escaped by the templates; the CSP below stops any script that
slipped through from running).

CSRF is checked by one app-wide dependency for every method that is not GET/HEAD/OPTIONS,
so a new POST route cannot forget it. A signed-in user's forms carry the session's CSRF
token; the login form carries a token from a short-lived cookie (double submit), so even
signing in cannot be forged by another site. A cross-site ``Origin`` is refused outright.

Images are addressed by the SHA-256 of their bytes: an image's URL is
``/images/<sha256>``. It names the content, not a server path or a row number, so it says
nothing about the server's folders, stays the same when the same file is imported again,
and can be cached for as long as the bytes are the same. Anything that is not 64
lowercase hex digits is a 404 before the database is asked, so ``../``, its encodings and
absolute paths never reach a file. The file path comes from the row written at import; a
file whose bytes changed since is refused (its address would lie).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gamut_eval._files import IMAGE_TYPES
from gamut_eval._folder import file_sha256
from gamut_eval.annotate._db import Database, Image, LoginSession, User
from gamut_eval.annotate._errors import AnnotateError, FormError, NotFound, PermissionDenied
from gamut_eval.annotate._users import (
    blocked_for,
    clear_failures,
    find_session,
    mark_seen,
    needs_mark,
    new_token,
    record_failure,
    same_token,
    sign_in,
    sign_out,
)

CSP = (
    "default-src 'self'; img-src 'self'; script-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    # same-origin, not no-referrer: with no-referrer browsers send ``Origin: null`` on our own
    # form posts, and the CSRF guard refuses a null Origin (an attacker can produce one).
    ("referrer-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
)


class RowId(Convertor[int]):
    """A row id in a path (``/rubrics/{rubric_id:row_id}``): 1 to 9 digits, so anything
    else (a number past the database's integer, a sign, a letter) matches no route and is
    a 404 with the security headers, never a database error."""

    regex = "[0-9]{1,9}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("row_id", RowId())

_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """True for names and addresses that only this machine can reach."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Host names the app answers to: loopback names, the bound address unless it is a
    wildcard, and the names given with ``--allow-host`` (what a team's browsers type)."""
    names = set(_LOOPBACK_NAMES) | {h.strip("[]").lower() for h in extra}
    if bind_host not in ("0.0.0.0", "::", ""):
        names.add(bind_host.strip("[]").lower())
    return frozenset(names)


def _host_name(header: str) -> str:
    """The name part of a ``Host`` header: ``[::1]:8700`` -> ``::1``, ``a.b:80`` -> ``a.b``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HostAndHeadersMiddleware:
    """Refuses requests whose ``Host`` is not allowed (400) and adds the security headers
    to every response, including errors and static files."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS]
                message = {**message, "headers": headers}
            await send(message)

        host = Headers(scope=scope).get("host", "")
        if _host_name(host) not in self.hosts:
            response = PlainTextResponse("Invalid Host header", status_code=400)
            await response(scope, receive, send_with_headers)
            return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception:
            if not started:  # a bug's 500 carries the headers too; the error is still logged
                response = PlainTextResponse("Internal Server Error", status_code=500)
                await response(scope, receive, send_with_headers)
            raise


SESSION_COOKIE = "gamut_session"
LOGIN_COOKIE = "gamut_login_csrf"
_T = TypeVar("_T")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class LoginRequired(AnnotateError):
    """No valid session: pages redirect to the login form, other requests get 401."""

    status_code = 401


@dataclass(frozen=True)
class Viewer:
    """The signed-in user and their session's CSRF token (put in every form)."""

    user: User
    csrf_token: str


def db_session(request: Request) -> Iterator[Session]:
    """One transaction per request: committed when the route succeeds, else rolled back.
    Requests that change state take the write lock up front (see ``_db``)."""
    db: Database = request.app.state.db
    session = db.read() if request.method in SAFE_METHODS else db.write()
    with session, session.begin():
        yield session


_DB = Depends(db_session, scope="function")
"""Ends (commits) when the route returns, before the response is sent: a client that
follows the redirect must see the change, and a failed commit must not answer "saved"."""


def _live_session(session: Session, request: Request) -> tuple[LoginSession, User] | None:
    """The session behind the request's cookie and its user, unless it ended or was idle
    longer than the app's idle time (``create_app``)."""
    idle: float = request.app.state.idle_minutes
    return find_session(session, request.cookies.get(SESSION_COOKIE), idle)


def viewer(request: Request, session: Annotated[Session, _DB]) -> Viewer:
    """The signed-in user, or ``LoginRequired``; the request counts as the session's
    activity (written in the route's own transaction when it writes, else in a short one,
    since a read transaction must not write and a second writer would wait on the first)."""
    found = _live_session(session, request)
    if found is None:
        raise LoginRequired("Please sign in (or again: the session ended or was idle too long).")
    login, user = found
    if needs_mark(login, request.app.state.idle_minutes):
        if request.method in SAFE_METHODS:
            db: Database = request.app.state.db
            with db.write() as own, own.begin():
                mark_seen(own, login.id)
        else:
            mark_seen(session, login.id)
    return Viewer(user, login.csrf_token)


async def form_fields(request: Request) -> dict[str, str]:
    """The submitted form's text fields (files are never accepted)."""
    form = await request.form()
    return {k: v for k, v in form.items() if isinstance(v, str)}


DbSession = Annotated[Session, _DB]
"""A route parameter: this request's database session."""
Who = Annotated[Viewer, Depends(viewer, scope="function")]
"""A route parameter: the signed-in viewer (or a redirect to the login form)."""
Fields = Annotated[dict[str, str], Depends(form_fields)]
"""A route parameter: every text field of the submitted form."""


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


async def csrf_guard(request: Request) -> None:
    """Refuse a state-changing request without the right CSRF token (403).

    It reads the session in a short transaction of its own: app-wide dependencies are
    solved apart from the route's, so sharing the route's session is not possible."""
    if request.method in SAFE_METHODS:
        return
    if not _same_origin(request):
        raise PermissionDenied("Cross-site request refused.")
    given = (await form_fields(request)).get("csrf_token")
    if request.url.path == "/login":
        expected = request.cookies.get(LOGIN_COOKIE)
    else:
        expected = await run_in_threadpool(_session_csrf, request)
    if not expected or not same_token(given, expected):
        raise PermissionDenied(
            "The form's security token is missing or stale (CSRF check). Reload the page "
            "and submit again."
        )


def _session_csrf(request: Request) -> str:
    db: Database = request.app.state.db
    with db.read() as session, session.begin():
        found = _live_session(session, request)
    if found is None:
        raise LoginRequired("Please sign in.")
    return found[0].csrf_token


def render(
    request: Request,
    name: str,
    context: dict[str, Any],
    *,
    who: Viewer | None = None,
    status: int = 200,
) -> HTMLResponse:
    """Render a template; pages are never cached (they show live state and tokens)."""
    templates: Jinja2Templates = request.app.state.templates
    full = {"viewer": who, "csrf_token": who.csrf_token if who else "", **context}
    return templates.TemplateResponse(
        request, name, full, status_code=status, headers={"cache-control": "no-store"}
    )


def submitted(
    change: Callable[[], _T], then: Callable[[_T], str], again: Callable[[list[str]], Response]
) -> Response:
    """A form's ``change``, then a redirect (303) to the address ``then`` makes of its
    result; a ``FormError`` shows the form's page ``again`` with its messages instead."""
    try:
        result = change()
    except FormError as exc:
        return again(exc.messages)
    return RedirectResponse(then(result), status_code=303)


router = APIRouter()


def _cookie(
    response: Response, request: Request, name: str, value: str, path: str, age: int
) -> None:
    """HttpOnly (no script can read it) and SameSite=Strict (no other site can send it)."""
    response.set_cookie(
        name,
        value,
        max_age=age,
        path=path,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _login_page(request: Request, error: str = "", status: int = 200, name: str = "") -> Response:
    token = new_token()
    context = {"login_csrf": token, "error": error, "name": name}
    response = render(request, "login.html", context, status=status)
    _cookie(response, request, LOGIN_COOKIE, token, "/login", 3600)
    return response


@router.get("/login")
def login_form(request: Request, *, session: DbSession) -> Response:
    """The sign-in form (or the dashboard for someone already signed in)."""
    if _live_session(session, request) is not None:
        return RedirectResponse("/", status_code=303)
    return _login_page(request)


@router.post("/login")
def login(
    request: Request,
    *,
    token: Annotated[str, Form()] = "",
    name: Annotated[str, Form()] = "",
    session: DbSession,
) -> Response:
    """Trade a user's name and login token for a session cookie; repeated failures of one
    name from one address are slowed down (``record_failure``)."""
    hours: float = request.app.state.session_hours
    address = request.client.host if request.client else "unknown"
    name = name.strip()[:64]
    wait = blocked_for(session, name, address)
    if wait > 0:
        seconds = math.ceil(wait)
        response = _login_page(
            request,
            f"Too many failed sign-ins from your address: wait {seconds} s, then try again.",
            429,
            name,
        )
        response.headers["retry-after"] = str(seconds)
        return response
    signed = sign_in(session, token, hours, name)
    if signed is None:
        delay = record_failure(session, name, address)
        later = f" Wait {math.ceil(delay)} s before the next try." if delay else ""
        return _login_page(
            request,
            f"That name and token do not match a user. Ask an admin for yours.{later}",
            401,
            name,
        )
    clear_failures(session, name, address)
    response = RedirectResponse("/", status_code=303)
    _cookie(response, request, SESSION_COOKIE, signed.cookie, "/", int(hours * 3600))
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


@router.post("/logout")
def logout(request: Request, *, session: DbSession) -> Response:
    """End the session on the server too, so the cookie is worthless afterwards."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        sign_out(session, cookie)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


@router.get("/images/{digest}")
def image(digest: str, session: DbSession, _: Who) -> FileResponse:
    """The bytes of the image whose SHA-256 is ``digest``."""
    if not _DIGEST.match(digest):
        raise NotFound("No such image.")
    rows = session.scalars(select(Image).where(Image.sha256 == digest).order_by(Image.id))
    for row in rows:
        path = Path(row.path)
        if path.suffix.lower() not in IMAGE_TYPES or not path.is_file():
            continue
        if file_sha256(path) != digest:
            continue
        return FileResponse(
            path,
            media_type=IMAGE_TYPES[path.suffix.lower()],
            headers={"cache-control": "private, max-age=86400, immutable"},
        )
    raise NotFound("No such image.")
