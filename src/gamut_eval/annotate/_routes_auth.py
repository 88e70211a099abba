"""Signing in with a token, and out."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from gamut_eval.annotate._backoff import blocked_for, clear_failures, record_failure
from gamut_eval.annotate._security import new_token
from gamut_eval.annotate._users import find_session, sign_in, sign_out
from gamut_eval.annotate._web import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    DbSession,
    idle_minutes,
    render,
)

__all__ = ["router"]

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
    cookie = request.cookies.get(SESSION_COOKIE)
    if find_session(session, cookie, idle_minutes(request)) is not None:
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
    name from one address are slowed down (``_backoff``)."""
    hours: float = request.app.state.session_hours
    address = request.client.host if request.client else "unknown"
    name = name.strip()[:64]
    wait = blocked_for(session, name, address)
    if wait > 0:
        seconds = math.ceil(wait)
        response = _login_page(
            request,
            f"Too many failed sign-ins for this name from your address: wait {seconds} s, "
            "then try again.",
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
