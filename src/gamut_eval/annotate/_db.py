"""The database: the tables, an engine for a SQLite path or any SQLAlchemy URL, sessions,
migrations.

Every editable row has a ``version`` that each edit compares and bumps. JSON documents
(meta-rubrics, checklists, audit snapshots) are stored as text written by ``dumps`` below,
so the bytes of an audit entry are exactly what was saved, on SQLite and PostgreSQL alike.
Times are ISO-8601 UTC strings (``utc_now``), which sort as text.

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

import json
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import (
    CursorResult,
    Engine,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Update,
    create_engine,
    event,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from gamut_eval.errors import InputError


def dumps(data: Any) -> str:
    """Canonical JSON text for stored documents."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class Role(StrEnum):
    """What a user may do: annotators review and revise, adjudicators also break ties and
    drop questions, admins may do everything."""

    ANNOTATOR = "annotator"
    ADJUDICATOR = "adjudicator"
    ADMIN = "admin"


class Decision(StrEnum):
    """A reviewer's verdict on a candidate question."""

    ACCEPT = "accept"
    REVISE = "revise"
    DISCARD = "discard"


class QuestionStatus(StrEnum):
    """Where a candidate question is in its round (see ``_questions``)."""

    PENDING = "pending"
    ADJUDICATION = "adjudication"
    ACCEPTED = "accepted"
    REVISED = "revised"
    DISCARDED = "discarded"


class RubricStatus(StrEnum):
    """Where a rubric is in the current human revision round."""

    OPEN = "open"
    DONE = "done"
    DROPPED = "dropped"


class Base(DeclarativeBase):
    """Declarative base of the annotation tables."""


class User(Base):
    """A person with a login token (only its SHA-256 is stored)."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[str] = mapped_column(String(32))


class LoginSession(Base):
    """A signed-in browser: the cookie holds a random token, the table its hash."""

    __tablename__ = "sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[str] = mapped_column(String(32))
    expires_at: Mapped[str] = mapped_column(String(32))
    last_seen_at: Mapped[str | None] = mapped_column(String(32))
    """The last request of this session (idle expiry); None means ``created_at``."""


class LoginFailure(Base):
    """Failed sign-ins in a row from one address for one user name (the backoff's count)."""

    __tablename__ = "login_failures"
    __table_args__ = (UniqueConstraint("name", "address"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    address: Mapped[str] = mapped_column(String(64))
    failures: Mapped[int] = mapped_column(Integer)
    blocked_until: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[str] = mapped_column(String(32))


class Image(Base):
    """An image, served only by the SHA-256 of its bytes (never by a path from a request)."""

    __tablename__ = "images"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(512), unique=True)
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str | None] = mapped_column(String(64), index=True)
    """Hex SHA-256 of the file's bytes at import: the image's address (``/images/<sha256>``)."""
    entity: Mapped[str | None] = mapped_column(Text)
    domain: Mapped[str | None] = mapped_column(String(128))
    popularity: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[str] = mapped_column(String(32))


class Question(Base):
    """A candidate question in a review round; a revision creates a child in the next round."""

    __tablename__ = "questions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    candidate_id: Mapped[str] = mapped_column(String(512), unique=True)
    image_id: Mapped[int] = mapped_column(ForeignKey("images.id"), index=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("questions.id"))
    round: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), index=True)
    origin: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[str] = mapped_column(String(32))


class Review(Base):
    """One person's decision on one question: a review, or the adjudication of a tie.

    One row per person and question, so an adjudicator is always a third person.
    """

    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("question_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    kind: Mapped[str] = mapped_column(String(16))
    decision: Mapped[str] = mapped_column(String(16))
    revised_text: Mapped[str | None] = mapped_column(Text)
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[str] = mapped_column(String(32))


class Rubric(Base):
    """A question's rubric under human revision: the meta-rubric scaffold and the checklist."""

    __tablename__ = "rubrics"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    record_id: Mapped[str] = mapped_column(String(512), unique=True)
    image_id: Mapped[int | None] = mapped_column(ForeignKey("images.id"))
    question_id: Mapped[int | None] = mapped_column(ForeignKey("questions.id"))
    question: Mapped[str] = mapped_column(Text)
    question_text_only: Mapped[str | None] = mapped_column(Text)
    entity: Mapped[str | None] = mapped_column(Text)
    domain: Mapped[str | None] = mapped_column(String(128))
    popularity: Mapped[str | None] = mapped_column(String(16))
    meta_rubric: Mapped[str] = mapped_column(Text)
    checklist: Mapped[str] = mapped_column(Text)
    extra: Mapped[str] = mapped_column(Text)
    round: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), index=True)
    ambiguous_note: Mapped[str | None] = mapped_column(Text)
    drop_reason: Mapped[str | None] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[str] = mapped_column(String(32))


class RubricEvent(Base):
    """The audit trail of a rubric: who did what, when, and the value before and after."""

    __tablename__ = "rubric_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubrics.id"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    actor: Mapped[str] = mapped_column(String(600))
    action: Mapped[str] = mapped_column(String(32))
    round: Mapped[int] = mapped_column(Integer)
    before: Mapped[str | None] = mapped_column(Text)
    after: Mapped[str | None] = mapped_column(Text)
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[str] = mapped_column(String(32))


class ExportRecord(Base):
    """One export: its number is the dataset version written into every record."""

    __tablename__ = "exports"
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    records: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[str] = mapped_column(String(32))


class LabelQuestion(Base):
    """A question of a calibration sample, for people to label its answers: the checklist
    scored (from the run's dataset) and the image."""

    __tablename__ = "label_questions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_id: Mapped[str] = mapped_column(String(512), unique=True)
    image_id: Mapped[int | None] = mapped_column(ForeignKey("images.id"))
    checklist: Mapped[str] = mapped_column(Text)
    dataset: Mapped[str] = mapped_column(Text)
    created_at: Mapped[str] = mapped_column(String(32))


class LabelAnswer(Base):
    """One answer of a run to a sampled question (a model in a setting), to be labelled."""

    __tablename__ = "label_answers"
    __table_args__ = (UniqueConstraint("question_id", "model", "setting"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("label_questions.id"), index=True)
    model: Mapped[str] = mapped_column(String(256))
    setting: Mapped[str] = mapped_column(String(32))
    asked: Mapped[str] = mapped_column(Text)
    """The question as the model was asked it in its setting."""
    response: Mapped[str] = mapped_column(Text)
    run: Mapped[str] = mapped_column(Text)
    created_at: Mapped[str] = mapped_column(String(32))


class AnswerLabel(Base):
    """One person's verdicts on the checks of one answer (JSON: check id -> verdict), and
    when they were all given (``completed_at``; None while some check has none)."""

    __tablename__ = "answer_labels"
    __table_args__ = (UniqueConstraint("answer_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    answer_id: Mapped[int] = mapped_column(ForeignKey("label_answers.id"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    verdicts: Mapped[str] = mapped_column(Text)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[str] = mapped_column(String(32))
    completed_at: Mapped[str | None] = mapped_column(String(32))


_MIGRATIONS = Path(__file__).parent / "migrations"
_WRITE = "gamut_write"
"""Execution option marking a connection whose transactions must begin immediately."""


def utc_now(later: timedelta = timedelta()) -> str:
    """ISO-8601 UTC with microseconds, ``later`` from now: sorts as text the same way as in
    time, on any engine."""
    return (datetime.now(UTC) + later).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
            f"database {shown_url(url)}: SQLAlchemy has no dialect for "
            f"{url.split('://', 1)[0]!r}; use a SQLite file path or postgresql://...",
            setting="db",
        ) from None
    except ArgumentError as exc:
        raise InputError(
            f"database {shown_url(url)!r}: not a database URL ({exc}); give a SQLite file "
            "path or a URL such as postgresql://user@host/dbname",
            setting="db",
        ) from None
    except ImportError as exc:
        name = exc.name or str(exc)
        raise InputError(
            f"database {shown_url(url)}: the database driver {name!r} is not installed. "
            f"PostgreSQL needs psycopg 3: {_EXTRA} (or pip install 'psycopg[binary]')",
            setting="db",
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
