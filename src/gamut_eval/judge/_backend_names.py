"""The judge backends' names, importable without pydantic (``gamut run --help`` lists them)."""

from __future__ import annotations

from typing import Literal

__all__ = ["ONLINE_BACKENDS", "BackendName"]

BackendName = Literal["auto", "fast", "inspect", "batch", "ray"]
ONLINE_BACKENDS: tuple[str, ...] = ("auto", "fast", "inspect")
"""The backends that answer while the command runs (``gamut run`` offers only these)."""
