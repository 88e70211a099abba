"""Users, login tokens and browser sessions, and the backoff after failed sign-ins.

A user's login token is shown once (``gamut annotate users add``) and only its hash is
stored. Signing in trades the token for a session: a second random token in an HttpOnly
cookie, again stored only as a hash, with its own CSRF token. A session ends at its
``expires_at``, or earlier when it was idle (no request) for longer than the app's idle
time; each request moves ``last_seen_at`` on (written at most once a minute).

Repeated failed sign-ins are slowed down, per user name at one client address and per
client address, counted separately. Login tokens are 256 random bits, so guessing one is
hopeless; the backoff still makes a script that hammers the form cheap to ignore, and tells
a person who pasted the wrong token what is going on. The first ``FREE_FAILURES`` failures
in a row of one (name, address) pair cost nothing; each further one blocks that pair for
twice as long as the last (1 s, 2 s, 4 s, ... at most ``MAX_DELAY``). An address has its
own count over every name (``ADDRESS_FREE_FAILURES`` free), so trying many names from one
address is slowed down too. While blocked, the form answers 429 with ``Retry-After``
without looking at the token, so even the right one waits. Another address is never
affected, so nobody can lock a user out from elsewhere; the address is the connection's
own unless it comes from a proxy named with ``--forwarded-allow-ips``, so a client cannot
pick a fresh one by sending a header. A successful sign-in clears the pair's count. The
counts live in the database, so every worker process shares them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from gamut_eval.annotate._db import Database, LoginFailure, LoginSession, Role, User, utc_now
from gamut_eval.errors import InputError


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


@dataclass(frozen=True)
class NewToken:
    """A user and the login token just issued for them (shown once, never stored)."""

    name: str
    role: Role
    token: str


@dataclass(frozen=True)
class SignedIn:
    """A new browser session: the cookie value and the session's CSRF token."""

    cookie: str
    csrf_token: str
    user: User


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 64 or not name.replace("-", "").replace("_", "").isalnum():
        raise InputError(
            f"user name {name!r}: use 1-64 letters, digits, '-' or '_' (it appears in the "
            "audit trail and the exported provenance)"
        )
    return name


def add_user(db: Database, name: str, role: Role) -> NewToken:
    """Create a user; the returned token is the only copy there will ever be."""
    name = _check_name(name)
    token = new_token()
    with db.write() as session, session.begin():
        if session.scalar(select(User).where(User.name == name)) is not None:
            raise InputError(
                f"user {name!r} already exists; to issue a new token run "
                f"`gamut annotate users token {name}`"
            )
        session.add(
            User(name=name, role=role.value, token_hash=hash_token(token), created_at=utc_now())
        )
    return NewToken(name, role, token)


def reset_token(db: Database, name: str) -> NewToken:
    """Issue a new token for ``name``; the old token and all its sessions stop working."""
    token = new_token()
    with db.write() as session, session.begin():
        user = session.scalar(select(User).where(User.name == name))
        if user is None:
            raise InputError(f"no user named {name!r}; see `gamut annotate users list`")
        user.token_hash = hash_token(token)
        session.execute(delete(LoginSession).where(LoginSession.user_id == user.id))
        return NewToken(user.name, Role(user.role), token)


def list_users(db: Database) -> list[tuple[str, Role, str]]:
    """``(name, role, created_at)`` of every user, by name."""
    with db.read() as session:
        users = session.scalars(select(User).order_by(User.name)).all()
        return [(u.name, Role(u.role), u.created_at) for u in users]


def count_users(db: Database) -> int:
    """How many users exist (no users means no one can sign in)."""
    with db.read() as session:
        return session.scalar(select(func.count(User.id))) or 0


def sign_in(session: Session, token: str, hours: float, name: str = "") -> SignedIn | None:
    """A new session for the owner of ``token``, or None when no user has it (or, when a
    ``name`` is given, when it is not that user's)."""
    user = session.scalar(select(User).where(User.token_hash == hash_token(token.strip())))
    if user is None or (name and name.casefold() != user.name.casefold()):
        return None
    cookie, csrf = new_token(), new_token()
    session.add(
        LoginSession(
            token_hash=hash_token(cookie),
            user_id=user.id,
            csrf_token=csrf,
            created_at=utc_now(),
            expires_at=utc_now(timedelta(hours=hours)),
            last_seen_at=utc_now(),
        )
    )
    return SignedIn(cookie, csrf, user)


def find_session(
    session: Session, cookie: str | None, idle_minutes: float
) -> tuple[LoginSession, User] | None:
    """The live session behind a cookie value and its user; None if unknown, expired, or
    idle for more than ``idle_minutes``."""
    if not cookie:
        return None
    row = session.execute(
        select(LoginSession, User)
        .join(User, User.id == LoginSession.user_id)
        .where(LoginSession.token_hash == hash_token(cookie))
    ).first()
    if row is None or row[0].expires_at <= utc_now():
        return None
    seen = row[0].last_seen_at or row[0].created_at
    if seen <= utc_now(-timedelta(minutes=idle_minutes)):
        return None
    return row[0], row[1]


SEEN_EVERY = 60.0
"""Seconds between writes of ``last_seen_at`` (fewer writes; idle times are minutes)."""


def needs_mark(login: LoginSession, idle_minutes: float) -> bool:
    """Whether ``last_seen_at`` is old enough to be written again."""
    every = min(SEEN_EVERY, idle_minutes * 6)  # a tenth of the idle time, at most a minute
    seen = login.last_seen_at or login.created_at
    return seen <= utc_now(-timedelta(seconds=every))


def mark_seen(session: Session, login_id: int) -> None:
    """Record a request of the session (idle expiry counts from here)."""
    session.execute(
        update(LoginSession).where(LoginSession.id == login_id).values(last_seen_at=utc_now())
    )


def sign_out(session: Session, cookie: str) -> None:
    """Forget a session server-side, so a copied cookie stops working too."""
    session.execute(delete(LoginSession).where(LoginSession.token_hash == hash_token(cookie)))


FREE_FAILURES = 3
"""Failures in a row of one (name, address) pair that cost nothing."""
ADDRESS_FREE_FAILURES = 10
"""Failures in a row from one address, whatever the names, that cost nothing."""
MAX_DELAY = 300.0
"""Seconds: the longest a (name, address) pair or an address is blocked after one more
failure."""
ANY_NAME = " *"
"""The name of an address's own count (no user name starts with a space)."""


def _keys(name: str, address: str) -> list[tuple[str, str, int]]:
    """The two counts a sign-in from ``address`` as ``name`` touches: the pair's, and the
    address's (every name), each with its free failures."""
    where = address[:64]
    return [
        (name.strip().lower()[:64], where, FREE_FAILURES),
        (ANY_NAME, where, ADDRESS_FREE_FAILURES),
    ]


def delay_after(failures: int, free: int = FREE_FAILURES) -> float:
    """Seconds blocked after the ``failures``-th failure in a row (``free`` cost nothing)."""
    if failures < free:
        return 0.0
    return min(2.0 ** (failures - free), MAX_DELAY)


def _row(session: Session, key: str, where: str) -> LoginFailure | None:
    query = select(LoginFailure).where(LoginFailure.name == key, LoginFailure.address == where)
    return session.scalar(query)


def blocked_for(session: Session, name: str, address: str) -> float:
    """Seconds a sign-in as ``name`` from ``address`` must still wait (0: it may try now):
    the longer of the pair's block and the address's."""
    wait = 0.0
    for key, where, _ in _keys(name, address):
        row = _row(session, key, where)
        if row is not None:
            until = datetime.fromisoformat(row.blocked_until)  # the Z makes it UTC
            wait = max(wait, (until - datetime.now(UTC)).total_seconds())
    return wait


def record_failure(session: Session, name: str, address: str) -> float:
    """Count one more failure of the pair and of the address; the seconds the sign-in is
    now blocked for (the longer of the two)."""
    delay = 0.0
    for key, where, free in _keys(name, address):
        row = _row(session, key, where)
        if row is None:
            row = LoginFailure(name=key, address=where, failures=0, blocked_until="", updated_at="")
            session.add(row)
        row.failures += 1
        row_delay = delay_after(row.failures, free)
        row.blocked_until = utc_now(timedelta(seconds=row_delay))
        row.updated_at = utc_now()
        delay = max(delay, row_delay)
    session.flush()
    return delay


def clear_failures(session: Session, name: str, address: str) -> None:
    """Forget the pair's failures (after a successful sign-in). The address's count stays:
    signing in with one's own token must not wipe the failures tried on other names."""
    key, where, _ = _keys(name, address)[0]
    session.execute(
        delete(LoginFailure).where(LoginFailure.name == key, LoginFailure.address == where)
    )
