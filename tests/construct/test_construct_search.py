"""Search providers (local FTS5, Tavily, Brave), the fetcher and snippet matching."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gamut_eval.construct import (
    BraveSearch,
    FetchedPage,
    Fetcher,
    FetchError,
    FetchSettings,
    LocalSearch,
    SearchError,
    TavilySearch,
    make_search_provider,
)
from gamut_eval.construct._search import fts_query, sections
from gamut_eval.construct._sources import match_snippet
from gamut_eval.errors import InputError

# -- local search -----------------------------------------------------------------------


async def test_local_search_ranks_passages_and_keeps_source_and_title(corpus: Path) -> None:
    search = LocalSearch(corpus)
    hits = await search.search("bibimbap toppings beef egg", 3)
    assert hits[0].text.startswith("Common toppings include beef")
    assert hits[0].title == "Bibimbap"
    assert hits[0].source == (corpus / "bibimbap.md").resolve().as_uri()
    assert hits[0].score >= hits[-1].score
    tower = await search.search("Gustave Eiffel", 2)
    assert tower[0].title == "Eiffel Tower"  # from the HTML <title>
    assert "1887 to 1889" in tower[0].text
    # script text is not indexed
    assert all("ignored" not in h.text for h in await search.search("bibimbap tower", 10))
    await search.aclose()


async def test_query_syntax_never_reaches_fts5(corpus: Path) -> None:
    search = LocalSearch(corpus)
    assert fts_query('"squid" NEAR(x) -octopus* OR (') == '"squid" OR "near" OR "octopus"'
    hits = await search.search('squid" OR -octopus* NEAR(', 2)
    assert hits
    assert "squid" in hits[0].text
    assert await search.search("the of and", 5) == []  # only stopwords: nothing to match
    await search.aclose()


async def test_the_index_is_kept_and_rebuilt_when_the_corpus_changes(
    corpus: Path, tmp_path: Path
) -> None:
    index = tmp_path / "index" / "local.sqlite"
    first = LocalSearch(corpus, index)
    identity = first.identity
    await first.aclose()
    (corpus / "kimchi.txt").write_text("Kimchi is fermented cabbage, often served with bibimbap.")
    second = LocalSearch(corpus, index)
    assert second.identity != identity
    assert second.identity.startswith("local:")
    assert (await second.search("kimchi cabbage", 1))[0].text.startswith("Kimchi")
    await second.aclose()


def test_long_paragraphs_are_split_into_short_passages() -> None:
    text = "# Title\n\n" + " ".join(f"Sentence number {i} is here." for i in range(60))
    title, found = sections(text)
    assert title == "Title"
    assert len(found) > 1
    assert all(len(p) <= 600 for _, p in found)


def test_local_search_needs_a_corpus(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="search 'local' needs a corpus") as caught:
        make_search_provider("local")
    assert caught.value.setting == "corpus"  # the command line adds its option
    with pytest.raises(InputError, match="no documents found"):
        LocalSearch(tmp_path)
    with pytest.raises(InputError, match="unknown search provider"):
        make_search_provider("bing")


# -- matching ------------------------------------------------------------------------------

SOURCE = FetchedPage(
    "Common toppings include **beef**, a “fried egg”, tofu and chicken.\n"
    "The vegetables are seasoned separately before they are arranged on the rice."
)


def test_snippets_match_verbatim_fuzzy_or_not_at_all() -> None:
    assert match_snippet("common toppings include beef, a fried egg", SOURCE)[0] == "verbatim"
    edited = "The vegetables are seasoned one by one before they are arranged on the rice."
    status, score, _ = match_snippet(edited, SOURCE)
    assert status == "not_found"
    assert 0 < score < 0.8
    reflowed = (
        "Common toppings include beef, a fried egg, tofu and chicken. The vegetables are "
        "seasoned separately before they are placed on the rice."
    )
    assert match_snippet(reflowed, SOURCE)[0] == "fuzzy"
    gone = match_snippet("Jeonju is famous for its bibimbap.", FetchedPage("x", truncated=True))
    assert gone[0] == "not_found"
    assert "size cap" in str(gone[2])


# -- fetcher ----------------------------------------------------------------------------------


@pytest.fixture
async def server() -> AsyncIterator[Callable[[dict[str, Any]], str]]:
    """A loopback HTTP server; ``routes`` maps a path to a handler."""
    routes: dict[str, Any] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        handler = routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="no")
        result: web.StreamResponse = await handler(request)
        return result

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    test_server = TestServer(app)
    await test_server.start_server()

    def add(new: dict[str, Any]) -> str:
        routes.update(new)
        return str(test_server.make_url("/"))

    yield add
    await test_server.close()


async def test_fetcher_reads_http_with_limits(server: Callable[[dict[str, Any]], str]) -> None:
    async def page(request: web.Request) -> web.Response:
        html = "<html><title>T</title><p>Hello <b>there</b></p><script>x()</script></html>"
        return web.Response(text=html, content_type="text/html")

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="word " * 10_000, content_type="text/plain")

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.Response(text="late")

    async def pdf(request: web.Request) -> web.Response:
        return web.Response(body=b"%PDF", content_type="application/pdf")

    base = server({"/page": page, "/big": big, "/slow": slow, "/pdf": pdf})
    fetcher = Fetcher(FetchSettings(timeout_s=0.5, max_bytes=1000))
    fetched = await fetcher.fetch(f"{base}page")
    assert "Hello there" in fetched.text
    assert "x()" not in fetched.text
    capped = await fetcher.fetch(f"{base}big")
    assert capped.truncated
    assert len(capped.text) == 1000
    with pytest.raises(FetchError, match="TimeoutError"):
        await fetcher.fetch(f"{base}slow")
    with pytest.raises(FetchError, match="HTTP 404"):
        await fetcher.fetch(f"{base}missing")
    with pytest.raises(FetchError, match="not a text page"):
        await fetcher.fetch(f"{base}pdf")
    await fetcher.aclose()


async def test_fetcher_reads_local_files(corpus: Path) -> None:
    fetcher = Fetcher()
    by_uri = await fetcher.fetch((corpus / "eiffel-tower.html").resolve().as_uri())
    assert "wrought-iron lattice tower" in by_uri.text
    assert "<p>" not in by_uri.text
    by_path = await fetcher.fetch(str(corpus / "bibimbap.md"))
    assert "Jeonju" in by_path.text
    with pytest.raises(FetchError, match="cannot read"):
        await fetcher.fetch(str(corpus / "gone.md"))
    with pytest.raises(FetchError, match="unsupported scheme"):
        await fetcher.fetch("ftp://example.org/x")
    web_only = Fetcher(FetchSettings(allow_files=False))
    with pytest.raises(FetchError, match="local files are off"):
        await web_only.fetch((corpus / "bibimbap.md").resolve().as_uri())


# -- web search APIs ------------------------------------------------------------------------


async def test_tavily_and_brave_keep_url_and_title(
    server: Callable[[dict[str, Any]], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    async def tavily(request: web.Request) -> web.Response:
        seen["tavily"] = (request.headers["Authorization"], await request.json())
        results = [{"title": "B", "url": "https://x.org/b", "content": "Bibimbap is mixed rice."}]
        return web.json_response({"results": [*results, {"title": "empty", "content": ""}]})

    async def brave(request: web.Request) -> web.Response:
        seen["brave"] = (request.headers["X-Subscription-Token"], dict(request.query))
        result = {
            "title": "B",
            "url": "https://y.org",
            "description": "<strong>Bibimbap</strong> x",
        }
        return web.json_response({"web": {"results": [result]}})

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=429, text="slow down")

    base = server({"/tavily": tavily, "/brave": brave, "/broken": broken})
    t = TavilySearch("tv-key", base_url=f"{base}tavily")
    [hit] = await t.search("bibimbap", 2)
    assert (hit.text, hit.source, hit.title) == ("Bibimbap is mixed rice.", "https://x.org/b", "B")
    assert seen["tavily"] == (
        "Bearer tv-key",
        {"query": "bibimbap", "max_results": 2, "search_depth": "basic"},
    )
    b = BraveSearch("br-key", base_url=f"{base}brave")
    [hit] = await b.search("bibimbap", 2)
    assert (hit.text, hit.source) == ("Bibimbap x", "https://y.org")
    assert seen["brave"] == ("br-key", {"q": "bibimbap", "count": "2"})
    failing = TavilySearch("k", base_url=f"{base}broken")
    with pytest.raises(SearchError, match="HTTP 429"):
        await failing.search("x", 1)
    for provider in (t, b, failing):
        await provider.aclose()

    with pytest.raises(InputError, match="TAVILY_API_KEY"):
        make_search_provider("tavily")
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "from-env")
    assert make_search_provider("brave").identity == "brave"
