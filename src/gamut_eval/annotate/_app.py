"""The application factory (routes, templates, error pages, security middleware), and
serving it: the bind-address rule, then uvicorn (docs/reliability.md E15).

The app listens on loopback unless users exist: a wildcard or LAN address with nobody
able to sign in is almost certainly a mistake, and refusing costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path, PurePath
from urllib.parse import urlsplit

import jinja2
import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.templating import Jinja2Templates
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from gamut_eval.annotate import _pages, _web
from gamut_eval.annotate._db import Database
from gamut_eval.annotate._errors import AnnotateError
from gamut_eval.annotate._users import count_users
from gamut_eval.annotate._web import (
    SAFE_METHODS,
    HostAndHeadersMiddleware,
    LoginRequired,
    allowed_hosts,
    csrf_guard,
    is_loopback,
    render,
)
from gamut_eval.errors import InputError

_HERE = Path(__file__).parent
_TIER_NAMES = {"answer_critical": "Answer-Critical", "valuable": "Valuable", "context": "Context"}


def _file_name(key: str) -> str:
    """An image key as a page shows it: a key that is a server path (an image imported
    without an id) shows its file name only, never the folders it lies in."""
    return PurePath(key).name if "/" in key or "\\" in key else key


def _http_url(value: object) -> str | None:
    """A link target only for http(s) URLs: ``javascript:`` or ``data:`` stay plain text."""
    text = str(value or "")
    parts = urlsplit(text)
    return text if parts.scheme in ("http", "https") and parts.netloc else None


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every value is escaped; no template uses |safe
        undefined=jinja2.StrictUndefined,
    )
    env.filters["http_url"] = _http_url
    env.filters["file_name"] = _file_name
    env.filters["tier_name"] = lambda tier: _TIER_NAMES.get(str(tier), str(tier))
    return Jinja2Templates(env=env)


_TITLES = {
    401: "Please sign in",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict: not saved",
    422: "Please correct the form",
}


def _error_page(request: Request, status: int, message: str) -> Response:
    context = {"title": _TITLES.get(status, "Error"), "problem": message, "status": status}
    return render(request, "error.html", context, status=status)


async def _annotate_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, LoginRequired) and request.method in SAFE_METHODS:
        return RedirectResponse("/login", status_code=303)
    status = exc.status_code if isinstance(exc, AnnotateError) else 500
    return _error_page(request, status, str(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    message = (
        "There is nothing at this address." if status == 404 else str(getattr(exc, "detail", ""))
    )
    return _error_page(request, status, message)


async def _invalid_form(request: Request, exc: Exception) -> Response:
    fields = sorted({str(e.get("loc", ("", "?"))[-1]) for e in getattr(exc, "errors", list)()})
    return _error_page(
        request,
        422,
        f"The form was incomplete or malformed (fields: {', '.join(fields)}). "
        "Reload the page and try again.",
    )


def create_app(
    db: Database,
    *,
    hosts: Iterable[str] = (),
    bind_host: str = "127.0.0.1",
    session_hours: float = 12.0,
    idle_minutes: float = 60.0,
    forwarded_allow_ips: Sequence[str] = (),
) -> FastAPI:
    """The annotation app over ``db``; ``hosts`` are extra Host names it answers to.
    A session lasts ``session_hours`` at most, and ends after ``idle_minutes`` without
    a request. ``forwarded_allow_ips``: the proxies (addresses, networks, or ``*``) whose
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed; from any other client
    those headers are ignored, so the client address (the sign-in backoff's key) is the
    connection's own."""
    app = FastAPI(
        title="gamut annotate",
        docs_url=None,  # the interactive docs load scripts from a CDN, which the CSP forbids
        redoc_url=None,
        openapi_url=None,
        dependencies=[Depends(csrf_guard, scope="function")],
    )
    app.state.db = db
    app.state.templates = _templates()
    app.state.session_hours = session_hours
    app.state.idle_minutes = idle_minutes
    for module in (_web, _pages):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=_HERE / "static"), name="static")
    app.add_exception_handler(AnnotateError, _annotate_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_form)
    app.add_middleware(HostAndHeadersMiddleware, hosts=allowed_hosts(bind_host, hosts))
    if forwarded_allow_ips:  # outermost: every layer below sees the client it names
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(forwarded_allow_ips))
    return app


def check_bind(host: str, users: int) -> None:
    """Refuse a non-loopback address while no user (hence no authentication) exists."""
    if not is_loopback(host) and users == 0:
        raise InputError(
            f"refusing to listen on {host}: no users exist yet, so the app has no "
            "authentication configured. Add one first (`gamut annotate users add NAME "
            "--role admin`), or listen on 127.0.0.1."
        )


def serve(
    db: Database,
    host: str,
    port: int,
    allow_hosts: Iterable[str] = (),
    idle_minutes: float = 60.0,
    forwarded_allow_ips: Sequence[str] = (),
) -> None:
    """Serve the app until interrupted; the schema is migrated before the first request.
    Sessions end after ``idle_minutes`` without a request. Forwarded headers are believed
    only from ``forwarded_allow_ips`` (see ``create_app``)."""
    db.migrate()
    check_bind(host, count_users(db))
    app = create_app(
        db,
        hosts=allow_hosts,
        bind_host=host,
        idle_minutes=idle_minutes,
        forwarded_allow_ips=forwarded_allow_ips,
    )
    # The app reads the forwarded headers itself (create_app), so uvicorn's own reading,
    # which trusts 127.0.0.1 by default, is off: a local client cannot name another address.
    uvicorn.run(
        app, host=host, port=port, proxy_headers=False, server_header=False, log_level="info"
    )
