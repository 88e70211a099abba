"""Search providers behind one interface: ``local`` (a folder, SQLite FTS5) and web APIs.

Every provider returns ``SearchHit``s that keep the source URL and title, so each snippet
can be cited and re-verified. ``identity`` names what the results depend on (the provider,
and for ``local`` the corpus's content hash): it is part of every cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gamut_eval.errors import GamutError, InputError

__all__ = [
    "SEARCH_PROVIDERS",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "make_search_provider",
]

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


def make_search_provider(
    name: str,
    *,
    corpus: str | Path | None = None,
    index_path: str | Path | None = None,
    timeout_s: float = 30.0,
) -> SearchProvider:
    """The provider called ``name``; ``local`` needs ``corpus`` (a folder of documents),
    web providers read their API key from the environment."""
    if name == "local":
        from gamut_eval.construct._local_search import LocalSearch

        if corpus is None:
            raise InputError("--search local needs --corpus DIR (a folder of .txt/.md/.html files)")
        return LocalSearch(Path(corpus), None if index_path is None else Path(index_path))
    if name in ("tavily", "brave"):
        from gamut_eval.construct._web_search import BraveSearch, TavilySearch

        provider = TavilySearch if name == "tavily" else BraveSearch
        return provider.from_env(timeout_s=timeout_s)
    raise InputError(
        f"unknown search provider {name!r}; choose one of {', '.join(SEARCH_PROVIDERS)}"
    )
