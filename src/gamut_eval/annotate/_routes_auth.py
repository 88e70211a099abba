"""Signing in with a token, and out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from gamut_eval.annotate._security import new_token
from gamut_eval.annotate._users import find_session, sign_in, sign_out
from gamut_eval.annotate._web import LOGIN_COOKIE, SESSION_COOKIE, DbSession, render

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


def _login_page(request: Request, error: str = "", status: int = 200) -> Response:
    token = new_token()
    response = render(request, "login.html", {"login_csrf": token, "error": error}, status=status)
    _cookie(response, request, LOGIN_COOKIE, token, "/login", 3600)
    return response


@router.get("/login")
def login_form(request: Request, *, session: DbSession) -> Response:
    """The sign-in form (or the dashboard for someone already signed in)."""
    if find_session(session, request.cookies.get(SESSION_COOKIE)) is not None:
        return RedirectResponse("/", status_code=303)
    return _login_page(request)


@router.post("/login")
def login(request: Request, *, token: Annotated[str, Form()] = "", session: DbSession) -> Response:
    """Trade a login token for a session cookie."""
    hours: float = request.app.state.session_hours
    signed = sign_in(session, token, hours)
    if signed is None:
        return _login_page(request, "That token is not valid. Ask an admin for yours.", 401)
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
