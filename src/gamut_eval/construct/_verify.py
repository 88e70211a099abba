"""Is a snippet still in its source? Verbatim, fuzzy, or not found.

Verbatim: the snippet's words occur in the page as one run (case, punctuation, quotes and
markup ignored, since search providers and HTML rendering change those). Fuzzy: at least
``FUZZY_THRESHOLD`` of the snippet's word trigrams occur in the page, which survives an
ellipsis, an edited word or a provider's re-flowed excerpt, but not a passage that is gone.
"""

from __future__ import annotations

import html
import re
from typing import Literal

from gamut_eval.construct._fetch import FetchedPage
from gamut_eval.construct._text import plain_words

__all__ = ["FUZZY_THRESHOLD", "Match", "match_snippet"]

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
