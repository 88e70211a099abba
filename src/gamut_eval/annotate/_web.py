"""What every route shares: the database session, the signed-in viewer, CSRF, rendering.

CSRF is checked by one app-wide dependency for every method that is not GET/HEAD/OPTIONS,
so a new POST route cannot forget it. A signed-in user's forms carry the session's CSRF
token; the login form carries a token from a short-lived cookie (double submit), so even
signing in cannot be forged by another site. A cross-site ``Origin`` is refused outright.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.templating import Jinja2Templates

from gamut_eval.annotate._db import Database
from gamut_eval.annotate._errors import AnnotateError, FormError, PermissionDenied
from gamut_eval.annotate._models import User
from gamut_eval.annotate._security import same_token
from gamut_eval.annotate._users import find_session, mark_seen, needs_mark

__all__ = [
    "LOGIN_COOKIE",
    "SAFE_METHODS",
    "SESSION_COOKIE",
    "DbSession",
    "Fields",
    "LoginRequired",
    "Viewer",
    "Who",
    "csrf_guard",
    "db_session",
    "form_fields",
    "idle_minutes",
    "render",
    "submitted",
    "viewer",
]

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


def idle_minutes(request: Request) -> float:
    """How long a session may go without a request before it ends (``create_app``)."""
    minutes: float = request.app.state.idle_minutes
    return minutes


def viewer(request: Request, session: Annotated[Session, _DB]) -> Viewer:
    """The signed-in user, or ``LoginRequired``; the request counts as the session's
    activity (written in the route's own transaction when it writes, else in a short one,
    since a read transaction must not write and a second writer would wait on the first)."""
    idle = idle_minutes(request)
    found = find_session(session, request.cookies.get(SESSION_COOKIE), idle)
    if found is None:
        raise LoginRequired("Please sign in (or again: the session ended or was idle too long).")
    login, user = found
    if needs_mark(login, idle):
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
        found = find_session(session, request.cookies.get(SESSION_COOKIE), idle_minutes(request))
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
    change: Callable[[], _T],
    then: Callable[[_T], str],
    again: Callable[[list[str]], Response],
) -> Response:
    """A form's ``change``, then a redirect (303) to the address ``then`` makes of its
    result; a ``FormError`` shows the form's page ``again`` with its messages instead."""
    try:
        result = change()
    except FormError as exc:
        return again(exc.messages)
    return RedirectResponse(then(result), status_code=303)
