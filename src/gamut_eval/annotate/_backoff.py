"""Slowing down repeated failed sign-ins, per user name and client address.

Login tokens are 256 random bits, so guessing one is hopeless; the backoff still makes a
script that hammers the form cheap to ignore, and tells a person who pasted the wrong
token what is going on. The first ``FREE_FAILURES`` failures in a row of one (name,
address) pair cost nothing; each further one blocks that pair for twice as long as the
last (1 s, 2 s, 4 s, ... at most ``MAX_DELAY``). While blocked, the form answers 429 with
``Retry-After`` without looking at the token, so even the right one waits. Another
address, or another name from the same address, is not affected. A successful sign-in
clears the count. The counts live in the database, so every worker process shares them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gamut_eval.annotate._db import utc_now
from gamut_eval.annotate._models import LoginFailure

__all__ = [
    "FREE_FAILURES",
    "MAX_DELAY",
    "blocked_for",
    "clear_failures",
    "delay_after",
    "record_failure",
]

FREE_FAILURES = 3
MAX_DELAY = 300.0
"""Seconds: the longest a (name, address) pair is blocked after one more failure."""


def _key(name: str, address: str) -> tuple[str, str]:
    return name.strip().lower()[:64], address[:64]


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def delay_after(failures: int) -> float:
    """Seconds blocked after the ``failures``-th failure in a row."""
    if failures < FREE_FAILURES:
        return 0.0
    return min(2.0 ** (failures - FREE_FAILURES), MAX_DELAY)


def _row(session: Session, name: str, address: str) -> LoginFailure | None:
    key, where = _key(name, address)
    query = select(LoginFailure).where(LoginFailure.name == key, LoginFailure.address == where)
    return session.scalar(query)


def blocked_for(session: Session, name: str, address: str) -> float:
    """Seconds this pair must still wait before its next attempt (0: it may try now)."""
    row = _row(session, name, address)
    if row is None:
        return 0.0
    until = datetime.strptime(row.blocked_until, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return max(0.0, (until - datetime.now(UTC)).total_seconds())


def record_failure(session: Session, name: str, address: str) -> float:
    """Count one more failure; the seconds the pair is now blocked for."""
    row = _row(session, name, address)
    if row is None:
        key, where = _key(name, address)
        row = LoginFailure(name=key, address=where, failures=0, blocked_until="", updated_at="")
        session.add(row)
    row.failures += 1
    delay = delay_after(row.failures)
    row.blocked_until = _stamp(datetime.now(UTC) + timedelta(seconds=delay))
    row.updated_at = utc_now()
    session.flush()
    return delay


def clear_failures(session: Session, name: str, address: str) -> None:
    """Forget the pair's failures (after a successful sign-in)."""
    key, where = _key(name, address)
    session.execute(
        delete(LoginFailure).where(LoginFailure.name == key, LoginFailure.address == where)
    )
