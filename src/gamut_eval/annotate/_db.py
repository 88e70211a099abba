"""The database: an engine for a SQLite path or any SQLAlchemy URL, sessions, migrations.

SQLite is the default (one file beside the data); a PostgreSQL URL works for a team. On
SQLite every transaction that writes starts with ``BEGIN IMMEDIATE``: a deferred
transaction that first reads and then writes can fail at once with ``database is locked``
when another writer committed in between (WAL snapshots cannot be upgraded), while an
immediate one simply waits its turn (``busy_timeout``). Reads stay deferred and concurrent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import CursorResult, Engine, Update, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

__all__ = ["Database", "database_url", "updated_rows", "utc_now"]

_MIGRATIONS = Path(__file__).parent / "migrations"
_WRITE = "gamut_write"
"""Execution option marking a connection whose transactions must begin immediately."""


def utc_now() -> str:
    """ISO-8601 UTC with microseconds: sorts as text the same way as in time, on any engine."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def updated_rows(session: Session, statement: Update) -> int:
    """Run an UPDATE and return how many rows it changed: 0 means a compare-and-set lost."""
    result = session.execute(statement.execution_options(synchronize_session=False))
    return cast("CursorResult[Any]", result).rowcount


def database_url(db: str | Path) -> str:
    """``--db`` takes a SQLAlchemy URL as is, or a file path that becomes a SQLite URL."""
    text = str(db)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take BEGIN away from the driver so the "begin" hook below decides its kind.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=15000")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    immediate = connection.get_execution_options().get(_WRITE)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """One engine and its two session factories: ``read()`` and ``write()``."""

    def __init__(self, url: str) -> None:
        self.url = url
        sqlite = url.startswith("sqlite")
        args = {"check_same_thread": False} if sqlite else {}
        self.engine: Engine = create_engine(url, connect_args=args)
        if sqlite:
            event.listen(self.engine, "connect", _sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)
        writer = self.engine.execution_options(**{_WRITE: True})
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(writer, expire_on_commit=False)

    @classmethod
    def open(cls, db: str | Path, *, migrate: bool = True) -> Database:
        """Open ``db`` (a path or URL) and bring its schema to the newest migration."""
        database = cls(database_url(db))
        if migrate:
            database.migrate()
        return database

    def read(self) -> Session:
        """A session for pages that only read."""
        return self._read()

    def write(self) -> Session:
        """A session whose transactions take the write lock first (see the module docstring)."""
        return self._write()

    def migrate(self) -> None:
        """Apply every Alembic migration shipped in the package that this database lacks."""
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with self.engine.execution_options(**{_WRITE: True}).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def close(self) -> None:
        """Close every pooled connection (tests and short CLI commands)."""
        self.engine.dispose()
