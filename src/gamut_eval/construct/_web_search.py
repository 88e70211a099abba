"""Web search APIs: Tavily and Brave, keys from the environment.

Both are plain HTTPS JSON APIs called with aiohttp (a total timeout per request); a failure
is a ``SearchError`` that ends only the question being researched. ``base_url`` points a
provider elsewhere (a proxy, or a local fake in tests). Brave wraps matched words in
``<strong>``; markup is removed so snippets are plain text that can be re-verified.
"""

from __future__ import annotations

import os
from typing import Any, Self

import aiohttp

from gamut_eval.construct._fetch import html_to_text
from gamut_eval.construct._search import SearchError, SearchHit
from gamut_eval.errors import InputError

__all__ = ["BraveSearch", "TavilySearch"]


def _key(names: tuple[str, ...], provider: str) -> str:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise InputError(f"--search {provider} needs an API key: set {' or '.join(names)}")


class _WebSearch:
    name = "web"
    default_url = ""
    key_vars: tuple[str, ...] = ()

    def __init__(self, api_key: str, *, base_url: str | None = None, timeout_s: float = 30.0):
        self._key = api_key
        self.base_url = base_url or self.default_url
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_env(cls, *, timeout_s: float = 30.0) -> Self:
        return cls(_key(cls.key_vars, cls.name), timeout_s=timeout_s)

    @property
    def identity(self) -> str:
        return self.name

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        raise NotImplementedError

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout, trust_env=True)
        return self._session

    async def _json(self, method: str, **kwargs: Any) -> Any:
        try:
            async with self._client().request(method, self.base_url, **kwargs) as response:
                if response.status >= 400:
                    body = (await response.text())[:200]
                    raise SearchError(f"{self.name}: HTTP {response.status}: {body}")
                return await response.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise SearchError(f"{self.name}: {type(exc).__name__}: {exc}") from None

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class TavilySearch(_WebSearch):
    """Tavily's search API (``TAVILY_API_KEY``)."""

    name = "tavily"
    default_url = "https://api.tavily.com/search"
    key_vars = ("TAVILY_API_KEY",)

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        body = {"query": query, "max_results": limit, "search_depth": "basic"}
        headers = {"Authorization": f"Bearer {self._key}"}
        data = await self._json("POST", json=body, headers=headers)
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise SearchError("tavily: the reply has no `results` list")
        return [
            SearchHit(str(r["content"]), r.get("url"), r.get("title"), float(r.get("score") or 0))
            for r in results
            if isinstance(r, dict) and isinstance(r.get("content"), str) and r["content"].strip()
        ][:limit]


class BraveSearch(_WebSearch):
    """Brave's web search API (``BRAVE_API_KEY`` or ``BRAVE_SEARCH_API_KEY``)."""

    name = "brave"
    default_url = "https://api.search.brave.com/res/v1/web/search"
    key_vars = ("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY")

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key}
        params = {"q": query, "count": str(min(limit, 20))}
        data = await self._json("GET", params=params, headers=headers)
        web = data.get("web") if isinstance(data, dict) else None
        results = web.get("results", []) if isinstance(web, dict) else []
        hits = []
        for rank, r in enumerate(results if isinstance(results, list) else []):
            if not isinstance(r, dict) or not isinstance(r.get("description"), str):
                continue
            text = html_to_text(r["description"]).replace("\n", " ").strip()
            if text:
                hits.append(SearchHit(text, r.get("url"), r.get("title"), float(-rank)))
        return hits[:limit]
