"""What a self-hosted server says about how many requests it serves at once.

The adaptive limit (``_concurrency.py``) finds a server's capacity by measuring latency;
where the server names it, the limit starts there instead of finding it from nothing.
Read once, before a pass's first request, from the server's root (the base URL without
its ``/v1``), and only from servers that are not a hosted API (``hosted_api``):

- llama.cpp's ``llama-server``: ``GET /props`` has ``total_slots`` (its ``--parallel``),
  and ``GET /slots`` lists one object per slot (on by default, off with ``--no-slots``).
- vLLM: ``GET /metrics`` (Prometheus text) has ``vllm:num_requests_running`` and
  ``vllm:num_requests_waiting``. It names no slot count (it batches as many requests as
  it is sent, up to its ``--max-num-seqs``), so a vLLM server with nothing waiting is fed
  the whole ``--concurrency`` from the start, and one that already holds waiting requests
  (others share it) starts low like any other.
- llama-cpp-python's server (``python -m llama_cpp.server``) offers none of these (404):
  it answers one request at a time behind a lock, and the latency finds that.

Anything else (an error, a timeout, a body that is not what the server documents, a count
that is not a positive integer) is no hint: the limit starts as it would have.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from gamut_eval.judge._registry import NATIVE_PROVIDERS, PROVIDERS

HINT_TIMEOUT_S = 5.0
"""Seconds each of the (at most three) look-ups may take."""

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_HOSTED = frozenset(
    host
    for provider in (*PROVIDERS.values(), *(p for p, _ in NATIVE_PROVIDERS.values()))
    if provider.default_base_url
    and (host := URL(provider.default_base_url).host) is not None
    and host not in _LOCAL_HOSTS
)
"""The hosts of the hosted APIs the registry knows (api.openai.com, ...)."""

Proxy = tuple[URL | None, dict[str, str] | None]
"""A proxy URL and its headers (``_client_http.env_proxy``), or none."""


def hosted_api(base_url: str) -> bool:
    """Whether ``base_url`` is a hosted API the registry knows: fed the whole
    ``--concurrency`` from the start (their latency stays flat; 429s say when to slow
    down) and never asked about slots."""
    return URL(base_url).host in _HOSTED


@dataclass(frozen=True, slots=True)
class ServerSlots:
    """What one server said."""

    source: str
    """Where it said it (``/props total_slots``), for the user's note."""
    slots: int | None = None
    """Requests it serves at once; None: it batches without naming a number (vLLM)."""
    waiting: int = 0
    """Requests it held waiting when asked (vLLM)."""

    def start(self, ceiling: int) -> int | None:
        """Where the limit starts for this server (None: where it would anyway)."""
        if self.slots is not None:
            return min(ceiling, self.slots)
        return ceiling if self.waiting == 0 else None


def server_root(base_url: str) -> str:
    """The server's root: the base URL without a trailing ``/v1``."""
    return base_url.removesuffix("/").removesuffix("/v1")


def _count(value: Any) -> int | None:
    """A positive integer count, or None (bools, floats with a fraction, strings...)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 1 else None


def slots_from_props(payload: Any) -> ServerSlots | None:
    """llama-server's ``GET /props``: ``{"total_slots": N, ...}``."""
    if not isinstance(payload, dict):
        return None
    slots = _count(payload.get("total_slots"))
    return ServerSlots("/props total_slots", slots) if slots else None


def slots_from_slots(payload: Any) -> ServerSlots | None:
    """llama-server's ``GET /slots``: a list of one object (with an ``id``) per slot."""
    if not isinstance(payload, list) or not payload:
        return None
    if not all(isinstance(slot, dict) and "id" in slot for slot in payload):
        return None
    return ServerSlots("/slots", len(payload))


def _metric(text: str, name: str) -> float | None:
    """The sum of a Prometheus metric's samples (over its label sets), None if absent."""
    total, seen = 0.0, False
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        rest = line[len(name) :]
        if rest[:1] == "{":
            rest = rest.partition("}")[2]
        elif rest[:1] not in (" ", "\t"):
            continue  # another metric whose name starts the same
        fields = rest.split()
        if not fields:
            return None
        try:
            value = float(fields[0])
        except ValueError:
            return None
        if not math.isfinite(value) or value < 0:
            return None
        total, seen = total + value, True
    return total if seen else None


def slots_from_metrics(text: str) -> ServerSlots | None:
    """vLLM's ``GET /metrics``: whether it holds requests waiting."""
    running = _metric(text, "vllm:num_requests_running")
    waiting = _metric(text, "vllm:num_requests_waiting")
    if running is None or waiting is None:
        return None
    return ServerSlots("/metrics (vLLM)", None, int(waiting))


async def _get(session: aiohttp.ClientSession, url: str, proxy: Proxy) -> bytes | None:
    timeout = aiohttp.ClientTimeout(total=HINT_TIMEOUT_S)
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, UnicodeError, ValueError):
        async with session.get(
            url, timeout=timeout, proxy=proxy[0], proxy_headers=proxy[1]
        ) as response:
            if response.status == 200:
                return await response.read()
    return None


def _json(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


async def read_server_slots(
    session: aiohttp.ClientSession, base_url: str, proxy: Proxy = (None, None)
) -> ServerSlots | None:
    """Ask the server at ``base_url`` (``/props``, then ``/slots``, then ``/metrics``,
    through ``proxy``: URL and headers); the first answer that says something, or None."""
    root = server_root(base_url)
    found = slots_from_props(_json(await _get(session, f"{root}/props", proxy)))
    if found is None:
        found = slots_from_slots(_json(await _get(session, f"{root}/slots", proxy)))
    if found is None:
        raw = await _get(session, f"{root}/metrics", proxy)
        if raw is not None:
            found = slots_from_metrics(raw.decode("utf-8", "replace"))
    return found
