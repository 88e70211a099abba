"""Search providers behind one interface: ``local`` (a folder, SQLite FTS5) and web APIs
(Tavily, Brave); ``make_search_provider`` picks one by name (``--search local|tavily|brave``).

Every provider returns ``SearchHit``s that keep the source URL and title, so each snippet
can be cited and re-verified. ``identity`` names what the results depend on (the provider,
and for ``local`` the corpus's content hash): it is part of every cache key.

``local`` indexes a folder of documents with SQLite FTS5 (BM25), for offline builds and
tests, and for benchmarks over an organisation's own documents. Documents (``.txt``,
``.md``, ``.markdown``, ``.html``, ``.htm``, searched recursively) are split into passages
(paragraphs, long ones into groups of sentences) so a hit is a short snippet; a passage
keeps its document's ``file://`` URL and title (for HTML the page's own title without the
site's name, as trafilatura reads it; a Markdown ``#`` heading; the ``<title>``; else the
file name), followed by its section's heading (``Espresso: Crema``). The index lives in the
build folder and is rebuilt when the corpus's content hash changes.

HTML pages are reduced to their main text by trafilatura (``main_text``): navigation,
cookie banners, sidebars, related links and footers are left out, so they never become
evidence. Precision is favoured (a page is better missing a marginal paragraph than
offering its menu as a snippet); comments are left out, tables kept. A page on which the
precise pass finds nothing is read again favouring recall; one with no main text at all
gives no passage. trafilatura comes with the ``inspect`` extra and is imported only when a
corpus holds HTML.

Queries are reduced to their content words: stop words (``STOPWORDS``: function words and
the words every question about a picture uses, "what kind of ... is this, how is it made")
are dropped, the rest quoted and joined with OR. FTS5 query syntax in a question (quotes,
``NEAR``, ``-``, ``*``) never reaches the parser, BM25 ranks passages matching more and
rarer content words first, and a passage sharing only a stop word with the question ("made")
is never a hit.

Web search APIs: Tavily and Brave, keys from the environment. Both are plain HTTPS JSON APIs
called with aiohttp (a total timeout per request); a failure is a ``SearchError`` that ends
only the question being researched. ``base_url`` points a provider elsewhere (a proxy, or a
local fake in tests). Brave wraps matched words in ``<strong>``; markup is removed so
snippets are plain text that can be re-verified.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Protocol, Self

import aiohttp

from gamut_eval._extras import MissingExtra, install_command
from gamut_eval.construct._models import SearchError, SearchHit
from gamut_eval.construct._sources import HttpClient, html_to_text
from gamut_eval.construct._text import words
from gamut_eval.errors import InputError

SEARCH_PROVIDERS: tuple[str, ...] = ("local", "tavily", "brave")


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


DOCUMENT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".html", ".htm"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
MAX_PASSAGE_CHARS = 600
"""Paragraphs longer than this are split into groups of sentences."""

_FUNCTION_WORDS = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each even
ever every few for from further had has have having he her here hers him his how i if in
into is it its itself just let me more most much my no nor not now of off on once one only
or other our ours out over own quite rather same she should so some such than that the
their theirs them then there these they this those through thus to too under until up upon
us very was we were what whatever when where whether which while who whom whose why will
with within without would you your
"""
_QUESTION_WORDS = """
actually anything called came come comes describe explain get gets go goes kind kinds know
like look looks made make makes name named people photo picture image shown show shows
something sort sorts tell thing things type types use used uses way ways work works
"""
"""Words any question about a picture uses ("what kind of ... is this, how is it made, how
does it work"): they say nothing of the subject, and matched alone they find any page."""
STOPWORDS = frozenset(_FUNCTION_WORDS.split()) | frozenset(_QUESTION_WORDS.split())

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_LIST_MARK = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")
_TABLE_RULE = re.compile(r"^\|?[\s|:-]+\|?$")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)(?=\S)(.+?)(?<=\S)\1")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_HELD = re.compile(r"\x00(\d+)\x00")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    text, title, source UNINDEXED, tokenize = 'porter unicode61'
);
"""
_INDEX_VERSION = "2"
"""Part of the stored corpus key: an index written by an older passage splitter is rebuilt."""


def fts_query(text: str) -> str:
    """An FTS5 query matching any of the text's content words (each quoted)."""
    terms = dict.fromkeys(w for w in words(text) if w not in STOPWORDS and len(w) > 1)
    return " OR ".join(f'"{t}"' for t in terms)


def _trafilatura() -> Any:
    try:
        import trafilatura
    except ModuleNotFoundError:
        raise MissingExtra(
            "reading HTML documents needs trafilatura, which comes with the optional "
            f"'inspect' extra: {install_command('inspect')}"
        ) from None
    return trafilatura


def main_text(html: str) -> str:
    """The main text of an HTML page as Markdown-like text (``#`` headings, paragraphs
    separated by blank lines), without navigation, banners, sidebars and footers; empty
    when the page has none."""
    trafilatura = _trafilatura()
    options: dict[str, Any] = {
        "output_format": "markdown",  # headings as ``#`` lines: they name the sections
        "include_comments": False,
        "include_tables": True,
        "include_links": False,
        "include_images": False,
    }
    for focus in ("favor_precision", "favor_recall"):
        text = trafilatura.extract(html, **options, **{focus: True})
        if text and text.strip():
            return str(text)
    return ""


def _split_long(paragraph: str) -> list[str]:
    if len(paragraph) <= MAX_PASSAGE_CHARS:
        return [paragraph]
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        if current and len(current) + len(sentence) + 1 > MAX_PASSAGE_CHARS:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    return [*out, current] if current else out


def _paragraph(lines: list[str]) -> str:
    """One block's text: list items and table rows joined with ``; ``, other lines with a
    space (a wrapped paragraph)."""
    items: list[str] = []
    for line in lines:
        if line.startswith("|"):
            if _TABLE_RULE.match(line):
                continue
            items.append(" | ".join(c.strip() for c in line.strip("|").split("|") if c.strip()))
        elif _LIST_MARK.match(line):
            items.append(_LIST_MARK.sub("", line))
        elif items:
            items[-1] += f" {line}"
        else:
            items.append(line)
    return "; ".join(i for i in items if i)


def sections(text: str) -> tuple[str | None, list[tuple[str | None, str]]]:
    """(title, [(section heading, passage), ...]) of a Markdown or plain-text document: the
    first ``#`` heading is the title, later headings name the passages below them."""
    title: str | None = None
    heading: str | None = None
    found: list[tuple[str | None, str]] = []
    for block in re.split(r"\n\s*\n", text):
        body: list[str] = []
        for line in (line.strip() for line in block.strip().splitlines()):
            if not line:
                continue
            if line.startswith("#"):
                name = line.lstrip("#").strip() or None
                if title is None:
                    title = name
                else:
                    heading = name
            else:
                body.append(line)
        paragraph = _EMPHASIS.sub(r"\2", _paragraph(body))
        if paragraph:
            found += [(heading, part) for part in _split_long(paragraph)]
    return title, found


def _unescaped_sections(markdown: str) -> tuple[str | None, list[tuple[str | None, str]]]:
    """``sections`` of trafilatura's Markdown, whose backslash escapes (``5\\*3``,
    ``a\\_b``) are characters of the page: held aside while headings, tables and
    emphasis are read, then put back."""
    kept: list[str] = []

    def hold(match: re.Match[str]) -> str:
        kept.append(match.group(1))
        return f"\x00{len(kept) - 1}\x00"

    def back(text: str) -> str:
        return _HELD.sub(lambda m: kept[int(m.group(1))], text)

    heading, found = sections(_ESCAPED.sub(hold, markdown))
    return heading and back(heading), [(h and back(h), back(p)) for h, p in found]


def _document(path: Path) -> tuple[str | None, list[tuple[str | None, str]]]:
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() not in HTML_SUFFIXES:
        return sections(raw)
    heading, found = _unescaped_sections(main_text(raw))
    title = _trafilatura().extract_metadata(raw).title or heading
    if not title:
        match = _TITLE.search(raw)
        title = " ".join(match.group(1).split()) if match else None
    return title, found


class LocalSearch:
    """BM25 search over the documents of ``corpus``; ``index_path`` ``None``: in memory."""

    name = "local"

    def __init__(self, corpus: Path, index_path: Path | None = None) -> None:
        if not corpus.is_dir():
            raise InputError(f"corpus {corpus}: no such folder", setting="corpus")
        self.corpus = corpus
        self._files = sorted(
            p for p in corpus.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
        )
        if not self._files:
            kinds = ", ".join(sorted(DOCUMENT_SUFFIXES))
            raise InputError(
                f"corpus {corpus}: no documents found (looked for {kinds})", setting="corpus"
            )
        if any(p.suffix.lower() in HTML_SUFFIXES for p in self._files):
            _trafilatura()  # before anything is written: the corpus cannot be read without it
        self.corpus_hash = self._hash()
        if index_path is not None:
            index_path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if index_path is None else index_path)
        self._db.executescript(_SCHEMA)
        self._ensure_index()

    @property
    def identity(self) -> str:
        return f"local:{self.corpus_hash}"

    def _hash(self) -> str:
        digest = hashlib.sha256()
        for path in self._files:
            digest.update(str(path.relative_to(self.corpus)).encode("utf-8") + b"\x00")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()

    def _ensure_index(self) -> None:
        key = f"{_INDEX_VERSION}:{self.corpus_hash}"
        row = self._db.execute("SELECT value FROM meta WHERE name = 'corpus_hash'").fetchone()
        if row is not None and row[0] == key:
            return
        with self._db:
            self._db.execute("DELETE FROM passages")
            for path in self._files:
                title, found = _document(path)
                page = title or path.stem
                source = path.resolve().as_uri()
                rows = [
                    (text, page if not heading else f"{page}: {heading}", source)
                    for heading, text in found
                ]
                self._db.executemany(
                    "INSERT INTO passages (text, title, source) VALUES (?, ?, ?)", rows
                )
            self._db.execute(
                "INSERT OR REPLACE INTO meta (name, value) VALUES ('corpus_hash', ?)", (key,)
            )

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        expression = fts_query(query)
        if not expression:
            return []
        rows = self._db.execute(
            "SELECT text, title, source, bm25(passages) AS rank FROM passages "
            "WHERE passages MATCH ? ORDER BY rank LIMIT ?",
            (expression, limit),
        ).fetchall()
        return [SearchHit(text, source, title, -rank) for text, title, source, rank in rows]

    async def aclose(self) -> None:
        self._db.close()


class _WebSearch(HttpClient):
    name = "web"
    default_url = ""
    key_vars: tuple[str, ...] = ()

    def __init__(self, api_key: str, *, base_url: str | None = None, timeout_s: float = 30.0):
        self._key = api_key
        self.base_url = base_url or self.default_url
        self.timeout_s = timeout_s

    @classmethod
    def from_env(cls, *, timeout_s: float = 30.0) -> Self:
        """With the first API key set among ``key_vars``."""
        for name in cls.key_vars:
            value = os.environ.get(name, "").strip()
            if value:
                return cls(value, timeout_s=timeout_s)
        names = " or ".join(cls.key_vars)
        raise InputError(f"search {cls.name!r} needs an API key: set {names}", setting="search")

    @property
    def identity(self) -> str:
        return self.name

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        raise NotImplementedError

    async def _json(self, method: str, **kwargs: Any) -> Any:
        try:
            async with self._client(self.timeout_s).request(
                method, self.base_url, **kwargs
            ) as response:
                if response.status >= 400:
                    body = (await response.text())[:200]
                    raise SearchError(f"{self.name}: HTTP {response.status}: {body}")
                return await response.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise SearchError(f"{self.name}: {type(exc).__name__}: {exc}") from None


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
            raise InputError(
                "search 'local' needs a corpus (a folder of .txt/.md/.html files)",
                setting="corpus",
            )
        return LocalSearch(Path(corpus), None if index_path is None else Path(index_path))
    if name in ("tavily", "brave"):
        provider = TavilySearch if name == "tavily" else BraveSearch
        return provider.from_env(timeout_s=timeout_s)
    raise InputError(
        f"unknown search provider {name!r}; choose one of {', '.join(SEARCH_PROVIDERS)}",
        setting="search",
    )
