"""Security helpers: tokens, the Host allow-list, response headers (docs/reliability.md E15-E16).

Threat model. The app runs on an annotator's laptop or a team server and shows untrusted
text (model-written questions, rubric text, evidence from the web). Attacks covered here:
a web page in the same browser posting forms to the app (CSRF: SameSite=Strict cookies
plus a per-session token checked on every POST), a hostile domain re-pointed at 127.0.0.1
(DNS rebinding: the ``Host`` header must be one we serve), and injected markup (escaped
by the templates; the CSP below stops any script that slipped through from running).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "HostAndHeadersMiddleware",
    "allowed_hosts",
    "hash_token",
    "is_loopback",
    "new_token",
    "same_token",
]

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
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def new_token() -> str:
    """A fresh secret: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 of a token. Tokens are 256 random bits, not passwords, so a fast hash is
    enough: there is nothing to brute-force, and a stolen database reveals no token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_token(given: str | None, expected: str) -> bool:
    """Constant-time comparison, so response timing does not leak the expected token."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


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
        await self.app(scope, receive, send_with_headers)
