"""Images addressed by content hash, idle session expiry, sign-in backoff.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def _sha256(path: str) -> str | None:
    file = Path(path)
    if not file.is_file():
        return None
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def upgrade() -> None:
    """Add ``images.sha256`` (hashing the files already imported), ``sessions.last_seen_at``
    and the ``login_failures`` table."""
    with op.batch_alter_table("images", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sha256", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_images_sha256"), ["sha256"], unique=False)
    images = sa.table(
        "images",
        sa.column("id", sa.Integer),
        sa.column("path", sa.Text),
        sa.column("sha256", sa.String),
    )
    connection = op.get_bind()
    for image_id, path in connection.execute(sa.select(images.c.id, images.c.path)).all():
        connection.execute(
            images.update().where(images.c.id == image_id).values(sha256=_sha256(path))
        )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_seen_at", sa.String(length=32), nullable=True))
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("blocked_until", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "address"),
    )


def downgrade() -> None:
    """Remove what ``upgrade`` added."""
    op.drop_table("login_failures")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_column("last_seen_at")
    with op.batch_alter_table("images", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_images_sha256"))
        batch_op.drop_column("sha256")
