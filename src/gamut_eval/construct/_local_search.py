"""The ``local`` search provider: a folder of documents, indexed with SQLite FTS5 (BM25).

For offline builds and tests, and for benchmarks over an organisation's own documents.
Documents (``.txt``, ``.md``, ``.markdown``, ``.html``, ``.htm``, searched recursively) are
split into passages (paragraphs, long ones into groups of sentences) so a hit is a short
snippet; a passage keeps its document's ``file://`` URL and title (a Markdown ``#``
heading, the HTML ``<title>``, else the file name). The index lives in the build folder
and is rebuilt when the corpus's content hash changes.

Queries are reduced to their words, each quoted, joined with OR: FTS5 query syntax in a
question (quotes, ``NEAR``, ``-``, ``*``) never reaches the parser, and BM25 ranks passages
matching more and rarer words first.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

from gamut_eval.construct._fetch import html_to_text
from gamut_eval.construct._search import SearchHit
from gamut_eval.construct._text import words
from gamut_eval.errors import InputError

__all__ = ["LocalSearch", "fts_query", "passages"]

DOCUMENT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".html", ".htm"})
MAX_PASSAGE_CHARS = 600
"""Paragraphs longer than this are split into groups of sentences."""

_STOPWORD_TEXT = (
    "a an and are as at be by does for from how in is it its of on or that the this these "
    "those to was what when where which who why with"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    text, title, source UNINDEXED, tokenize = 'porter unicode61'
);
"""


def fts_query(text: str) -> str:
    """An FTS5 query matching any of the text's content words (each quoted)."""
    terms = dict.fromkeys(w for w in words(text) if w not in _STOPWORDS and len(w) > 1)
    return " OR ".join(f'"{t}"' for t in terms)


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


def passages(text: str) -> tuple[str | None, list[str]]:
    """(title, passages) of a plain-text or Markdown document."""
    title = None
    found: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.strip().splitlines() if line.strip()]
        body = []
        for line in lines:
            if line.startswith("#"):
                title = title or line.lstrip("#").strip() or None
            else:
                body.append(line)
        paragraph = " ".join(body)
        if paragraph:
            found += _split_long(paragraph)
    return title, found


def _document(path: Path) -> tuple[str | None, list[str]]:
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        match = _TITLE.search(raw)
        title = " ".join(match.group(1).split()) if match else None
        _, found = passages(html_to_text(raw).replace("\n", "\n\n"))
        return title, found
    return passages(raw)


class LocalSearch:
    """BM25 search over the documents of ``corpus``; ``index_path`` ``None``: in memory."""

    name = "local"

    def __init__(self, corpus: Path, index_path: Path | None = None) -> None:
        if not corpus.is_dir():
            raise InputError(f"--corpus {corpus}: no such folder")
        self.corpus = corpus
        self._files = sorted(
            p for p in corpus.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
        )
        if not self._files:
            kinds = ", ".join(sorted(DOCUMENT_SUFFIXES))
            raise InputError(f"--corpus {corpus}: no documents found (looked for {kinds})")
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
        row = self._db.execute("SELECT value FROM meta WHERE name = 'corpus_hash'").fetchone()
        if row is not None and row[0] == self.corpus_hash:
            return
        with self._db:
            self._db.execute("DELETE FROM passages")
            for path in self._files:
                title, found = _document(path)
                source = path.resolve().as_uri()
                rows = [(text, title or path.stem, source) for text in found]
                self._db.executemany(
                    "INSERT INTO passages (text, title, source) VALUES (?, ?, ?)", rows
                )
            self._db.execute(
                "INSERT OR REPLACE INTO meta (name, value) VALUES ('corpus_hash', ?)",
                (self.corpus_hash,),
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
