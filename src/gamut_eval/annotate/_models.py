"""The tables. Every editable row has a ``version`` that each edit compares and bumps.

JSON documents (meta-rubrics, checklists, audit snapshots) are stored as text written by
``dumps`` below, so the bytes of an audit entry are exactly what was saved, on SQLite and
PostgreSQL alike. Times are ISO-8601 UTC strings (``utc_now``), which sort as text.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Base",
    "Decision",
    "ExportRecord",
    "Image",
    "LoginFailure",
    "LoginSession",
    "Question",
    "QuestionStatus",
    "Review",
    "Role",
    "Rubric",
    "RubricEvent",
    "RubricStatus",
    "User",
    "dumps",
]


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
    """Where a candidate question is in its round (see ``_rounds``)."""

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
