"""Alembic migrations of the annotation database, shipped in the package (applied on start)."""
