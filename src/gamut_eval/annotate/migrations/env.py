"""Alembic environment: runs on the connection ``Database.migrate`` hands over.

Run from the Alembic command line instead, it opens ``sqlalchemy.url`` itself.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from gamut_eval.annotate._db import Base


def _run(connection: Connection) -> None:
    # Batch mode lets later migrations alter columns on SQLite (which cannot ALTER in place).
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("set sqlalchemy.url, or migrate through `gamut annotate migrate`")
    engine = create_engine(url)
    with engine.begin() as own:
        _run(own)
    engine.dispose()


_main()
