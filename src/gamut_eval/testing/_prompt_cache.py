"""A provider-side prompt cache, as the Anthropic and Gemini fakes report it: a prompt
prefix sent before is a hit (its tokens count as cached), a new one is written."""

from __future__ import annotations

import hashlib
import threading

__all__ = ["PromptCache"]


class PromptCache:
    """The prefixes seen so far, by digest (thread-safe: the fakes serve from a thread)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def hit(self, prefix: str) -> bool:
        """Whether ``prefix`` was cached already; it is cached from now on."""
        digest = hashlib.sha256(prefix.encode()).hexdigest()
        with self._lock:
            seen = digest in self._seen
            self._seen.add(digest)
        return seen
