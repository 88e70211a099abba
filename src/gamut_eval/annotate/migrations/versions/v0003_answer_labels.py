"""People's verdicts on the answers of a calibration sample.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add ``label_questions``, ``label_answers`` and ``answer_labels``."""
    op.create_table(
        "label_questions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("question_id", sa.String(length=512), nullable=False),
        sa.Column("image_id", sa.Integer(), nullable=True),
        sa.Column("checklist", sa.Text(), nullable=False),
        sa.Column("dataset", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["image_id"], ["images.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("question_id"),
    )
    op.create_table(
        "label_answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("question_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("setting", sa.String(length=32), nullable=False),
        sa.Column("asked", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("run", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["question_id"], ["label_questions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("question_id", "model", "setting"),
    )
    op.create_index(
        op.f("ix_label_answers_question_id"), "label_answers", ["question_id"], unique=False
    )
    op.create_table(
        "answer_labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("answer_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("verdicts", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.Column("completed_at", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(["answer_id"], ["label_answers.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("answer_id", "user_id"),
    )
    op.create_index(
        op.f("ix_answer_labels_answer_id"), "answer_labels", ["answer_id"], unique=False
    )
    op.create_index(op.f("ix_answer_labels_user_id"), "answer_labels", ["user_id"], unique=False)


def downgrade() -> None:
    """Remove what ``upgrade`` added."""
    op.drop_index(op.f("ix_answer_labels_user_id"), table_name="answer_labels")
    op.drop_index(op.f("ix_answer_labels_answer_id"), table_name="answer_labels")
    op.drop_table("answer_labels")
    op.drop_index(op.f("ix_label_answers_question_id"), table_name="label_answers")
    op.drop_table("label_answers")
    op.drop_table("label_questions")
