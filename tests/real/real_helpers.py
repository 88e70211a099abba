"""Names the real-server tests import (a module of its own: ``from conftest import ...``
would pick whichever ``conftest`` was imported first when several test folders run in
one process)."""

from __future__ import annotations

__all__ = ["JUDGE", "MODEL_ALIAS"]

MODEL_ALIAS = "smollm2"
JUDGE = f"openai-api/llama/{MODEL_ALIAS}"
"""The model as users name it; the URL comes from LLAMA_BASE_URL."""
