"""Migration scripts, oldest first (Alembic reads them by revision id, not by import)."""
