"""The providers' prompt caches, as the fake servers emulate them: by each provider's
documented rules (``gamut_eval.judge.cache_rules``), with tokens counted as the fakes count
them (characters / 4).

- OpenAI (``openai_cache_use``): the prompt (its messages' texts in order) is cached from
  1,024 tokens; a request is served the longest prefix seen before, in steps of 128 tokens
  above 1,024. Writing costs nothing and is not reported.
- Anthropic (``anthropic_cache_use``): only prefixes that end at a block marked with
  ``cache_control`` are cached, and only from the model's minimum (1,024 to 4,096 tokens);
  a request reads the longest marked prefix seen before and writes the rest of its last
  marked prefix, both reported (``cache_read_input_tokens``, ``cache_creation_input_tokens``)
  apart from ``input_tokens``.
- Gemini (``gemini_cache_use``): the implicit cache of Gemini 2.5 and later; a request is
  served the longest prefix seen before that ends at a part boundary and reaches the
  model's minimum (2,048 or 4,096 tokens), reported as ``cachedContentTokenCount``.

A prefix becomes readable when the request that wrote it is answered, not when it
arrives: requests that arrive together all miss, as they do at the providers (a cache
entry exists once the first response begins). The cache is one store per fake server,
never evicted (the providers keep an entry for minutes after its last use).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gamut_eval.judge import cache_rules

OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128
_CHARS = 4
"""Characters per token, as the fakes count every prompt."""


@dataclass(frozen=True, slots=True)
class CacheUse:
    """What one request does with the cache: looked up when it arrives, committed when
    it is answered."""

    prompt_tokens: int
    """All its prompt tokens (read and written ones included)."""
    read: int = 0
    """Tokens served from the cache."""
    written: int = 0
    """Tokens written to it, where the provider reports writes (Anthropic)."""
    prefixes: tuple[str, ...] = ()
    """Digests of the prefixes it caches once answered."""


class PromptCache:
    """The prefixes a fake provider has cached, by digest (thread-safe: the fakes serve
    from a thread)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def longest(self, digests: Sequence[str]) -> int:
        """The index of the last of ``digests`` (ordered shortest prefix first) that is
        cached, or -1."""
        with self._lock:
            for index in range(len(digests) - 1, -1, -1):
                if digests[index] in self._seen:
                    return index
        return -1

    def add(self, digests: Iterable[str]) -> None:
        with self._lock:
            self._seen.update(digests)


def _digests(pieces: Iterable[str]) -> list[str]:
    """The digest of each prefix: the first piece, the first two, ..."""
    digest = hashlib.sha256()
    out = []
    for piece in pieces:
        digest.update(piece.encode())
        out.append(digest.copy().hexdigest())
    return out


def openai_cache_use(cache: PromptCache, text: str) -> CacheUse:
    """OpenAI's automatic cache for a prompt whose messages read ``text``."""
    tokens = max(1, len(text) // _CHARS)
    lengths = list(range(OPENAI_MIN_TOKENS, tokens + 1, OPENAI_STEP_TOKENS))
    if not lengths:
        return CacheUse(tokens)
    bounds = [0, *(n * _CHARS for n in lengths)]
    digests = _digests(text[a:b] for a, b in itertools.pairwise(bounds))
    hit = cache.longest(digests)
    return CacheUse(tokens, lengths[hit] if hit >= 0 else 0, 0, tuple(digests))


def _text_of(blocks: Sequence[dict[str, Any]]) -> list[str]:
    return [str(b.get("text", "")) if b.get("type", "text") == "text" else "" for b in blocks]


def _identity(block: dict[str, Any]) -> str:
    """A block as it counts for a prefix match (its cache mark left out)."""
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)


def _marked_prefixes(
    blocks: Sequence[dict[str, Any]], cut_after: Sequence[int], minimum: int
) -> tuple[list[int], list[str], int]:
    """(tokens, digest) of the prefixes ending after the blocks ``cut_after`` that reach
    ``minimum`` tokens, and the prompt's tokens."""
    texts = _text_of(blocks)
    digests = _digests(_identity(b) for b in blocks)
    ends, keys, chars = [], [], 0
    for index, text in enumerate(texts):
        chars += len(text)
        if index in cut_after and chars // _CHARS >= minimum:
            ends.append(chars // _CHARS)
            keys.append(digests[index])
    return ends, keys, max(1, chars // _CHARS)


def anthropic_cache_use(
    cache: PromptCache, model: str, blocks: Sequence[dict[str, Any]]
) -> CacheUse:
    """Anthropic's cache for a request whose system and message blocks are ``blocks``,
    in order (``cache_control`` marks where a cached prefix may end)."""
    rules = cache_rules(f"anthropic/{model}")
    minimum = rules.min_tokens if rules is not None else 0
    marked = [i for i, b in enumerate(blocks) if b.get("cache_control")]
    ends, keys, tokens = _marked_prefixes(blocks, marked, minimum)
    if not ends:
        return CacheUse(tokens)
    hit = cache.longest(keys)
    read = ends[hit] if hit >= 0 else 0
    return CacheUse(tokens, read, ends[-1] - read, tuple(keys))


def gemini_cache_use(cache: PromptCache, model: str, parts: Sequence[dict[str, Any]]) -> CacheUse:
    """Gemini's implicit cache for a request whose system instruction and content parts
    are ``parts``, in order: a prefix may end at any part but the last."""
    rules = cache_rules(f"google/{model}")
    blocks = [
        {"type": "text", "text": str(p["text"])} if "text" in p else {"type": "data", **p}
        for p in parts
    ]
    minimum = rules.min_tokens if rules is not None else 0
    ends, keys, tokens = _marked_prefixes(blocks, range(len(blocks) - 1), minimum)
    if rules is None or not ends:
        return CacheUse(tokens)
    hit = cache.longest(keys)
    return CacheUse(tokens, ends[hit] if hit >= 0 else 0, 0, tuple(keys))
