"""Search providers behind one interface: ``local`` (a folder, SQLite FTS5) and web APIs;
``make_search_provider`` (in ``_sources``) picks one by name.

Every provider returns ``SearchHit``s that keep the source URL and title, so each snippet
can be cited and re-verified. ``identity`` names what the results depend on (the provider,
and for ``local`` the corpus's content hash): it is part of every cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gamut_eval.errors import GamutError

SEARCH_PROVIDERS: tuple[str, ...] = ("local", "tavily", "brave")


class SearchError(GamutError):
    """A search request failed (after the provider's timeout or an error status)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: a short passage and where it came from."""

    text: str
    source: str | None
    title: str | None
    score: float = 0.0


class SearchProvider(Protocol):
    """What the evidence and refine stages need of a search provider."""

    name: str

    @property
    def identity(self) -> str:
        """What results depend on, for cache keys (``tavily``, ``local:<corpus hash>``)."""
        ...

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """Up to ``limit`` hits, best first; raises ``SearchError``."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
