"""Running the app: the bind-address rule, then uvicorn (docs/reliability.md E15).

The app listens on loopback unless users exist: a wildcard or LAN address with nobody
able to sign in is almost certainly a mistake, and refusing costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

import uvicorn

from gamut_eval.annotate._app import create_app
from gamut_eval.annotate._db import Database
from gamut_eval.annotate._security import is_loopback
from gamut_eval.annotate._users import count_users
from gamut_eval.errors import InputError

__all__ = ["check_bind", "serve"]


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
) -> None:
    """Serve the app until interrupted; the schema is migrated before the first request.
    Sessions end after ``idle_minutes`` without a request."""
    db.migrate()
    check_bind(host, count_users(db))
    app = create_app(db, hosts=allow_hosts, bind_host=host, idle_minutes=idle_minutes)
    # proxy_headers with uvicorn's default trust (127.0.0.1 only): behind a local TLS proxy
    # the scheme is https, so the session cookie is marked Secure.
    uvicorn.run(
        app, host=host, port=port, proxy_headers=True, server_header=False, log_level="info"
    )
