"""What the fake server knows about each chat-completion request, and its request log.

Crash/resume tests assert "zero repeated requests": that needs every request recorded with
a hash of its *canonical* JSON body (key order and whitespace do not matter), so two
records with the same hash are the same judge call sent twice.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a policy or a fault rule may know about a request besides its JSON body."""

    index: int
    """0-based arrival index since the server started or was last reset."""
    body_hash: str
    """sha256 (hex) of the canonical JSON request body."""
    seen_count: int
    """1 the first time this body hash arrives, 2 for its first repeat, and so on."""
    model: str
    """The ``model`` field of the request."""
    last_user_message: str
    """Text of the last ``user`` message (text parts joined by newlines)."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One entry of the request log."""

    index: int
    """0-based arrival index since the server started or was last reset."""
    arrived_at: float
    """Wall-clock arrival time (``time.time()``), comparable across processes."""
    body_hash: str
    """sha256 (hex) of the canonical JSON request body (of the raw bytes if not JSON)."""
    model: str
    """The ``model`` field of the request ("" when absent or unparseable)."""
    status: int | None
    """HTTP status sent; None while in flight or if the client left before the reply."""
    fault: str | None
    """The injected fault applied to this request, if any."""


def body_hash(payload: object) -> str:
    """sha256 of the canonical JSON form, so equal requests hash equally however serialised."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one chat message: a plain string, or its text parts joined by newlines.

    Image and audio parts are skipped; they carry no words for the stand-in judges.
    """
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts)


def _messages(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = request.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict)]


def user_messages(request: Mapping[str, Any]) -> list[str]:
    """Texts of the messages whose role is ``user``, in order."""
    return [message_text(m) for m in _messages(request) if m.get("role") == "user"]


def last_user_message(request: Mapping[str, Any]) -> str:
    """Text of the last message whose role is ``user`` ("" when there is none)."""
    users = user_messages(request)
    return users[-1] if users else ""


def prompt_text(request: Mapping[str, Any]) -> str:
    """All message texts in order, newline-joined: what the prompt token count is based on."""
    return "\n".join(message_text(m) for m in _messages(request))


class RequestLog:
    """Thread-safe, append-only log of requests, cleared only by :meth:`reset`.

    A record is appended when a request arrives (so its index is its arrival order) and
    completed with its status when the reply is sent. A generation number keeps a reply
    that finishes after a reset from overwriting a record of the new generation.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._seen: Counter[str] = Counter()
        self._generation = 0

    def arrive(self, digest: str, model: str) -> tuple[int, int, int]:
        """Record an arrival; return ``(generation, index, seen_count)``."""
        with self._lock:
            index = len(self._records)
            self._seen[digest] += 1
            record = RequestRecord(index, time.time(), digest, model, None, None)
            self._records.append(record)
            return self._generation, index, self._seen[digest]

    def finish(self, generation: int, index: int, status: int | None, fault: str | None) -> None:
        """Store the outcome of a request recorded by :meth:`arrive`."""
        with self._lock:
            if generation == self._generation:
                self._records[index] = replace(self._records[index], status=status, fault=fault)

    def records(self) -> list[RequestRecord]:
        """A snapshot copy, in arrival order."""
        with self._lock:
            return list(self._records)

    def count_by_body_hash(self) -> dict[str, int]:
        """How many times each body hash has arrived since the last reset."""
        with self._lock:
            return dict(self._seen)

    def reset(self) -> None:
        """Forget every record and every body hash; arrival indexes restart at 0."""
        with self._lock:
            self._records.clear()
            self._seen.clear()
            self._generation += 1
