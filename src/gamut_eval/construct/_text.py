"""Text normalisation shared by the stages: comparing questions, elements and snippets."""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w+")
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
"""Soft hyphen, zero-width spaces and joiners, word joiner, BOM: inside words on real
pages, invisible when rendered (removed, so "in\u00adclude" is one word)."""


def normalise(text: str) -> str:
    """Case-folded, whitespace collapsed (how the rubric rules compare list elements)."""
    return " ".join(text.casefold().split())


def element_key(text: str) -> str:
    """An element compared ignoring case, whitespace and one final full stop."""
    return normalise(text).removesuffix(".").strip()


def words(text: str) -> list[str]:
    """Case-folded word tokens after Unicode compatibility normalisation (punctuation,
    quotes, dashes and markup fall away, so "Bibimbap's" and "bibimbap s" compare equal)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text.translate(_INVISIBLE)).casefold())


def plain_words(text: str) -> list[str]:
    """``words`` with accents dropped too ("sautéed" and "sauteed" compare equal): for
    finding a quoted snippet in its source, where either side may have lost them."""
    decomposed = unicodedata.normalize("NFKD", text)
    return words("".join(c for c in decomposed if not unicodedata.combining(c)))


def names_entity(question: str, entity: str) -> bool:
    """True when the question contains the entity's name as a run of whole words."""
    name = words(entity)
    if not name:
        return False
    tokens = words(question)
    width = len(name)
    return any(tokens[i : i + width] == name for i in range(len(tokens) - width + 1))
