"""Reading a snippet's source again, for the audit, and matching the snippet on it.

HTTP fetches have a total timeout and a size cap (a page past the cap is cut and marked
truncated, so the audit can tell "not found" from "not read"); only text types are read.
``file://`` URLs and plain paths read local files (the ``local`` search provider, tests).
HTML is reduced to all its visible text, not only its main text: a quote a web search
provider took from a table or a sidebar is still on the page, and verifying it needs only
its words, in order, somewhere on the page.

Is a snippet still in its source? Verbatim: the snippet's words occur in the page as one
run (case, punctuation, quotes and markup ignored, since search providers and HTML rendering
change those). Fuzzy: at least ``FUZZY_THRESHOLD`` of the snippet's word trigrams occur in
the page, which survives an ellipsis, an edited word or a provider's re-flowed excerpt, but
not a passage that is gone.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

import aiohttp

from gamut_eval.construct._settings import FetchSettings
from gamut_eval.construct._text import plain_words
from gamut_eval.errors import GamutError

_USER_AGENT = "gamut-eval/0.1 (benchmark builder; re-verifies cited snippets)"
_TEXT_TYPES = ("text/", "application/xhtml", "application/json", "application/xml")
_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6"}
    | {"section", "article", "header", "footer", "blockquote", "pre", "table", "title"}
    | {"dl", "dt", "dd", "figure", "figcaption", "caption", "nav", "main", "aside", "hr"}
    | {"address", "details", "summary", "form", "fieldset", "legend", "option", "button"}
    | {"thead", "tbody", "tfoot", "body", "html"}
)


class FetchError(GamutError):
    """A source could not be read."""


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A source's text."""

    text: str
    truncated: bool = False
    """The size cap cut it: a snippet not found may be in the unread part."""


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":  # the head ends here even when its end tag is omitted (HTML5)
            self._skip = 0
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The visible text of an HTML page, one block per line."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _is_html(name_or_type: str) -> bool:
    return "html" in name_or_type.lower()


class HttpClient:
    """One aiohttp session, made on first use inside the running loop (it binds to it)."""

    _session: aiohttp.ClientSession | None = None

    def _client(
        self, timeout_s: float, headers: dict[str, str] | None = None
    ) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout, headers=headers, trust_env=True)
        return self._session

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class Fetcher(HttpClient):
    """Fetch sources; one HTTP session per fetcher."""

    def __init__(self, settings: FetchSettings | None = None) -> None:
        self.settings = settings or FetchSettings()

    async def fetch(self, source: str) -> FetchedPage:
        """The text of ``source`` (``https://``, ``http://``, ``file://`` or a path)."""
        scheme = urlparse(source).scheme.lower()
        if scheme in ("http", "https"):
            return await self._http(source)
        if scheme == "file" or len(scheme) <= 1:  # a path (one letter: a Windows drive)
            if not self.settings.allow_files:
                raise FetchError(f"not reading {source!r}: local files are off for this search")
            path = unquote(urlparse(source).path) if scheme == "file" else source
            return self._file(Path(path))
        raise FetchError(f"cannot fetch {source!r}: unsupported scheme {scheme!r}")

    def _file(self, path: Path) -> FetchedPage:
        try:
            with path.open("rb") as handle:
                data = handle.read(self.settings.max_bytes + 1)
        except OSError as exc:
            raise FetchError(f"cannot read {path}: {exc.strerror or exc}") from None
        truncated = len(data) > self.settings.max_bytes
        text = data[: self.settings.max_bytes].decode("utf-8", errors="replace")
        return FetchedPage(html_to_text(text) if _is_html(path.suffix) else text, truncated)

    async def _http(self, url: str) -> FetchedPage:
        session = self._client(self.settings.timeout_s, {"User-Agent": _USER_AGENT})
        try:
            async with session.get(url, allow_redirects=True) as response:
                if response.status >= 400:
                    raise FetchError(f"{url}: HTTP {response.status}")
                kind = response.headers.get("Content-Type", "text/html")
                if not kind.lower().startswith(_TEXT_TYPES):
                    raise FetchError(f"{url}: not a text page ({kind})")
                data, truncated = await self._read_capped(response.content)
                text = data.decode(response.charset or "utf-8", errors="replace")
        except (TimeoutError, aiohttp.ClientError, UnicodeError, LookupError) as exc:
            raise FetchError(f"{url}: {type(exc).__name__}: {exc}") from None
        return FetchedPage(html_to_text(text) if _is_html(kind) else text, truncated)

    async def _read_capped(self, stream: aiohttp.StreamReader) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        async for chunk in stream.iter_chunked(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > self.settings.max_bytes:
                return b"".join(chunks)[: self.settings.max_bytes], True
        return b"".join(chunks), False


FUZZY_THRESHOLD = 0.8
"""Share of word trigrams that must be found for a fuzzy match."""

Match = tuple[Literal["verbatim", "fuzzy", "not_found"], float, str | None]


def _grams(tokens: list[str]) -> list[tuple[str, ...]]:
    n = 3 if len(tokens) >= 3 else 1
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


_MARKERS = re.compile(
    r"\[(?:\d{1,3}|[a-z]|note \d+|citation needed|clarification needed|when\?|who\?)\]",
    re.IGNORECASE,
)
"""Citation and editorial markers (``[1]``, ``[a]``, ``[citation needed]``): on the page
between sentences, dropped or kept by whoever copied the snippet."""


def _tokens(text: str) -> list[str]:
    return plain_words(_MARKERS.sub(" ", text))


def match_snippet(snippet: str, page: FetchedPage) -> Match:
    """(status, trigram share found, detail when not found).

    Both sides are compared as words: case, punctuation, quotes, dashes, accents, markers
    and invisible characters ignored, and entities a search API left escaped in the snippet
    decoded (the page was decoded when its HTML was read)."""
    wanted = _tokens(html.unescape(snippet))
    have = _tokens(page.text)
    if not wanted:
        return "not_found", 0.0, "the snippet has no words"
    if f" {' '.join(wanted)} " in f" {' '.join(have)} ":
        return "verbatim", 1.0, None
    grams = _grams(wanted)
    present = set(_grams(have)) if len(wanted) >= 3 else {(t,) for t in have}
    share = sum(1 for g in grams if g in present) / len(grams)
    if share >= FUZZY_THRESHOLD:
        return "fuzzy", round(share, 3), None
    detail = f"only {share:.0%} of its word trigrams occur in the source"
    if page.truncated:
        detail += " (the page was cut at the size cap; it may be in the unread part)"
    return "not_found", round(share, 3), detail
