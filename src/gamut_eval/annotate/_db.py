"""The database: an engine for a SQLite path or any SQLAlchemy URL, sessions, migrations.

SQLite is the default (one file beside the data); a PostgreSQL URL works for a team
(``postgresql://`` means the psycopg 3 driver, which the ``annotate`` extra installs). On
SQLite every transaction that writes starts with ``BEGIN IMMEDIATE``: a deferred
transaction that first reads and then writes can fail at once with ``database is locked``
when another writer committed in between (WAL snapshots cannot be upgraded), while an
immediate one simply waits its turn (``busy_timeout``). Reads stay deferred and concurrent.
PostgreSQL gets the same rule: a writing transaction first takes one transaction-scoped
advisory lock, so writers run one at a time and each reads what the previous one committed
(READ COMMITTED takes a fresh snapshot per statement). Without it, two reviews of one
question read the same version and the second is refused although nobody else moved it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import CursorResult, Engine, Update, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from gamut_eval.errors import InputError

__all__ = ["Database", "database_url", "shown_url", "updated_rows", "utc_now"]

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


_DRIVERS = {"postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg"}
"""URL schemes without a driver, and the driver the app uses for them (psycopg 3)."""
_EXTRA = "pip install 'gamut-eval[annotate]'"


def database_url(db: str | Path) -> str:
    """``--db`` takes a SQLAlchemy URL, or a file path that becomes a SQLite URL.

    ``postgresql://`` and ``postgres://`` name no driver; they get psycopg 3's
    (``postgresql+psycopg://``) rather than SQLAlchemy's default, psycopg2."""
    text = str(db)
    if "://" in text:
        scheme, rest = text.split("://", 1)
        return f"{_DRIVERS.get(scheme.lower(), scheme)}://{rest}"
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def shown_url(url: str) -> str:
    """The URL for messages and logs: any password is masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _engine(url: str, connect_args: dict[str, Any]) -> Engine:
    """``create_engine``, with a missing driver or unknown scheme said plainly (exit 2)."""
    try:
        return create_engine(url, connect_args=connect_args)
    except NoSuchModuleError:
        raise InputError(
            f"--db {shown_url(url)}: SQLAlchemy has no dialect for "
            f"{url.split('://', 1)[0]!r}; use a SQLite file path or postgresql://..."
        ) from None
    except ArgumentError as exc:
        raise InputError(
            f"--db {shown_url(url)!r}: not a database URL ({exc}); give a SQLite file path "
            "or a URL such as postgresql://user@host/dbname"
        ) from None
    except ImportError as exc:
        name = exc.name or str(exc)
        raise InputError(
            f"--db {shown_url(url)}: the database driver {name!r} is not installed. "
            f"PostgreSQL needs psycopg 3: {_EXTRA} (or pip install 'psycopg[binary]')"
        ) from None


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


_PG_WRITE_LOCK = 0x67616D7574
"""The advisory lock key of the app's writers ("gamut" in ASCII)."""


def _postgres_begin(connection: Any) -> None:
    if connection.get_execution_options().get(_WRITE):
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_WRITE_LOCK})")


class Database:
    """One engine and its two session factories: ``read()`` and ``write()``."""

    def __init__(self, url: str) -> None:
        self.url = url
        sqlite = url.startswith("sqlite")
        args = {"check_same_thread": False} if sqlite else {}
        self.engine: Engine = _engine(url, args)
        if sqlite:
            event.listen(self.engine, "connect", _sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)
        elif self.engine.dialect.name == "postgresql":
            event.listen(self.engine, "begin", _postgres_begin)
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
        try:
            with self.engine.execution_options(**{_WRITE: True}).begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        except OperationalError as exc:
            reason = str(exc.orig).strip() if exc.orig is not None else str(exc)
            raise InputError(f"cannot open the database {self.shown}: {reason}") from None

    @property
    def shown(self) -> str:
        """The database URL with any password masked (for messages)."""
        return shown_url(self.url)

    def close(self) -> None:
        """Close every pooled connection (tests and short CLI commands)."""
        self.engine.dispose()
