"""The search provider a name stands for (``--search local|tavily|brave``)."""

from __future__ import annotations

from pathlib import Path

from gamut_eval.construct._local_search import LocalSearch
from gamut_eval.construct._search import SEARCH_PROVIDERS, SearchProvider
from gamut_eval.construct._web_search import BraveSearch, TavilySearch
from gamut_eval.errors import InputError

__all__ = ["make_search_provider"]


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
        if corpus is None:
            raise InputError("--search local needs --corpus DIR (a folder of .txt/.md/.html files)")
        return LocalSearch(Path(corpus), None if index_path is None else Path(index_path))
    if name in ("tavily", "brave"):
        provider = TavilySearch if name == "tavily" else BraveSearch
        return provider.from_env(timeout_s=timeout_s)
    raise InputError(
        f"unknown search provider {name!r}; choose one of {', '.join(SEARCH_PROVIDERS)}"
    )
