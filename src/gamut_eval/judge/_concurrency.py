"""How many requests one judge endpoint is fed at once: the adaptive in-flight limit.

A server answers more requests at once only up to a point: a hosted API's latency stays
flat as concurrency grows, a vLLM node batches until its GPU is busy, and a llama.cpp
server with one slot answers one request at a time, so past one every request it holds
only waits. Past that point more requests in flight buy nothing but latency, and a long
enough queue runs every request into its timeout. ``AdaptiveLimit`` finds the point by
measuring what each limit delivers.

Measured, per *round*: after a change of the limit, the next ``max(ROUND_MIN, limit)``
requests settle the server's queue at the new limit and are not counted; the next as many
are the round. When half of them have replied, the round gives the mean number in flight
``N`` (counted as each was sent) and the mean latency ``L`` of those replies; by Little's
law the server delivered ``N / L`` replies a second. (The first half to reply are the
shorter requests, alike in every round, so rounds compare like with like without waiting
for the slowest.) Two rounds at different limits give the *elasticity* of throughput: the
share of the added (or removed) concurrency that came back as throughput. A server whose
latency stays flat has elasticity 1; one that only queues has 0.

The controller (docs/decisions.md, feeding a server at its own pace):

- **Start** at ``START`` in flight (at the ceiling for a hosted API; where the server's
  slots say when it names them: ``hint``) and double each round while the elasticity
  (plus its noise) stays at least ``KEEP``, quadruple once it has stayed ``FLAT``: a
  server with room reaches the ceiling (``--concurrency``) in a few round trips, a
  one-slot server stops at once.
- A higher limit that bought less than ``KEEP`` is given back; one that bought less than
  ``QUEUEING`` only queued, so half the limit is **probed**: kept when it loses at most
  ``QUEUEING`` of the concurrency it removes, and probed lower again, down to ``FLOOR``
  (one request served and one waiting: a slot never idles while a reply travels). A
  lower probe that lost throughput is not tried again from the same limit until the
  server changes.
- **Hold** the limit; every ``HOLD_ROUNDS`` rounds probe ``STEP`` times higher, kept only
  for a gain beyond ``MARGIN`` times its noise (how far held rounds stray from their
  level, which at a queueing server is more than one round's own spread says); when
  the latency at the same limit grows past ``DRIFT`` times its level (the server slowed
  down, or others share it), or past ``latency_cap_s``, probe a lower one (below
  ``FLOOR`` too when near the cap).
- A probe never goes where the latency it is expected to bring (from the last elasticity
  measured; pure queueing before any is) would pass ``latency_cap_s``, half the request
  timeout, so probing does not run requests into their timeouts.
- A 429 (or a request that timed out) halves the limit at once, once per burst
  (``on_throttle``), and the controller measures again from there.

With ``adaptive=False`` (``--no-adaptive-concurrency``) latency changes nothing: the limit
is the ceiling, halved by 429s and raised again by one after each window of successes
(AIMD, as TCP does). Nothing here reads a clock: the executor hands each reply's latency
in, so tests drive the controller with simulated servers on a fake clock.

Where a self-hosted server names how many requests it serves at once (``ServerSlots``),
the limit starts there instead of finding it from nothing. Read once, before a pass's
first request, from the server's root (the base URL without its ``/v1``), and only from
servers that are not a hosted API (``hosted_api``):

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

import asyncio
import contextlib
import dataclasses
import json
import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from yarl import URL

from gamut_eval.judge._registry import NATIVE_PROVIDERS, PROVIDERS

START = 2
"""Requests in flight before anything is measured (when the server names no slots)."""
ROUND_MIN = 8
"""Replies one round needs at least (a round is also at least as many as the limit)."""
KEEP = 0.5
"""A higher limit is kept when throughput grew by at least this share of the added
concurrency."""
QUEUEING = 0.25
"""Below this share the added concurrency only queued: a lower limit is probed, and kept
when it loses at most this share of the concurrency it removes."""
STEP = 2.0
"""A probe after the start multiplies the limit by this (a step small enough to be
cheap would be lost in the noise of the rounds that measure it)."""
MARGIN = 0.5
"""After the start, a higher limit is kept when its elasticity, less this many times
its standard error, is at least ``KEEP``."""
HOLD_ROUNDS = 4
"""Rounds at a limit before a higher one is probed again."""
FLAT = 0.9
"""An elasticity this high while starting says the latency stays flat (a hosted API, a
big batch): the start quadruples instead of doubling."""
FLOOR = 2
"""The lowest limit latency alone probes (a limit near the timeout, a 429 or a timeout
go lower): one request served and one waiting keep a one-slot server busy."""
DRIFT = 2.0
"""Latency at the same limit this many times its level's starts a lower probe."""
_CHANGED = 0.2
"""Two rounds whose mean in flight differ by less than this share say nothing about
elasticity (the caller did not fill the limit)."""


@dataclass(frozen=True, slots=True)
class Level:
    """What one round at one limit delivered."""

    limit: int
    in_flight: float
    """Mean requests in flight when each of the round's requests was sent."""
    latency_s: float
    """Mean latency of the round's replies."""
    error: float = 0.0
    """Relative standard error of that mean (and so of the rate)."""

    @property
    def rate(self) -> float:
        """Replies a second (Little's law)."""
        return self.in_flight / self.latency_s


def elasticity(base: Level, other: Level) -> tuple[float, float] | None:
    """The share of the concurrency added (or removed) from ``base`` to ``other`` that
    came back (or was lost) as throughput, and its standard error; None when the two
    hardly differ in concurrency."""
    load = other.in_flight / base.in_flight - 1
    if abs(load) < _CHANGED:
        return None
    error = math.hypot(base.error, other.error) * other.rate / base.rate
    return (other.rate / base.rate - 1) / load, error / abs(load)


Probe = Literal["up", "down"]


class AdaptiveLimit:
    """A semaphore whose size the controller (module docstring) sets.

    ``acquire``/``release`` hold a slot. The executor calls ``sent`` as each request
    goes out (its slot held) and hands the ticket back with the reply's latency
    (``on_reply``) or without one (``on_lost``); ``on_throttle`` answers a 429 or a
    timeout. The limit never passes ``ceiling``.

    A round is the first ``max(ROUND_MIN, limit)`` requests sent after the last decision,
    and it ends when every one of them has come back: waiting for the slow ones too keeps
    the mean latency honest (the first replies of a round are the short ones).
    """

    __slots__ = (
        "_base",
        "_gain",
        "_held",
        "_knee",
        "_lost",
        "_n_sum",
        "_noise",
        "_probe",
        "_replies",
        "_round",
        "_round_sent",
        "_round_size",
        "_rtt_squares",
        "_rtt_sum",
        "_settle",
        "_startup",
        "_successes",
        "_waiters",
        "adaptive",
        "ceiling",
        "epoch",
        "in_flight",
        "latency_cap_s",
        "limit",
    )

    def __init__(
        self,
        ceiling: int,
        *,
        adaptive: bool = True,
        start: int = START,
        latency_cap_s: float = math.inf,
    ) -> None:
        self.ceiling = ceiling
        self.adaptive = adaptive
        self.latency_cap_s = latency_cap_s
        """Mean latency a probe must not be expected to pass (half the request timeout)."""
        self.limit = max(1, min(ceiling, start)) if adaptive else ceiling
        self.in_flight = 0
        self.epoch = 0
        """Bumped on every decrease by a 429; requests remember the epoch they were sent
        in, so one burst of 429s halves the limit once."""
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._successes = 0
        self._round = 0
        self._round_size = self._round_sent = self._replies = self._lost = self._settle = 0
        self._n_sum = self._rtt_sum = self._rtt_squares = 0.0
        self._base: Level | None = None
        self._probe: Probe | None = None
        self._startup = adaptive and self.limit < ceiling
        self._held = 0
        self._gain = 0.0
        """The last elasticity measured (0: assume pure queueing until one is)."""
        self._knee: int | None = None
        """A limit whose lower probe lost throughput: not probed below again until the
        server changes."""
        self._noise = 0.0
        """How far a held round's rate strays from its level's (root mean square share):
        rounds at a server that queues vary together, more than one round's spread says."""
        self._new_round()

    # -- the semaphore ------------------------------------------------------------------

    async def acquire(self) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1  # fast path: no future, no await
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted just before the cancel: pass the slot on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    # -- what the server says -----------------------------------------------------------

    def hint(self, slots: int) -> None:
        """Start at the server's own count of the requests it serves at once (before
        anything was measured)."""
        if self.adaptive and slots >= 1 and self._base is None and self._probe is None:
            self._startup = slots < self.ceiling
            self._set(min(self.ceiling, slots))

    def sent(self) -> int:
        """A request goes out now (its slot held): the ticket to hand back with its
        outcome (``on_reply``/``on_lost``)."""
        if not self.adaptive or self._round_sent >= self._round_size:
            return -1  # not part of a round
        if self._settle > 0:
            self._settle -= 1
            return -1
        self._round_sent += 1
        self._n_sum += self.in_flight
        return self._round

    def on_reply(self, ticket: int, latency_s: float) -> None:
        """A reply came back ``latency_s`` after its request was sent."""
        if not self.adaptive:
            self._additive_increase()
        elif ticket == self._round:
            if latency_s > 0:
                self._replies += 1
                self._rtt_sum += latency_s
                self._rtt_squares += latency_s * latency_s
            else:  # an unmeasured clock
                self._lost += 1
            self._end_round()

    def on_lost(self, ticket: int) -> None:
        """A request of the round came back without a reply (it failed)."""
        if ticket == self._round:
            self._lost += 1
            self._end_round()

    def on_throttle(self, sent_in_epoch: int) -> None:
        """A 429 (or a timeout) to a request sent in ``sent_in_epoch``: halve the limit,
        once per burst."""
        if sent_in_epoch != self.epoch:
            return  # sent before the last decrease: that decrease already answered it
        self.epoch += 1
        self._successes = 0
        self._startup = False
        self._base, self._probe, self._held, self._knee = None, None, 0, None
        self._set(max(1, self.limit // 2))

    # -- the controller -----------------------------------------------------------------

    def _additive_increase(self) -> None:
        """Fixed mode: +1 after a window of ``limit`` successes, up to the ceiling."""
        if self.limit >= self.ceiling:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1
            self._wake()

    def _end_round(self) -> None:
        size, count = self._round_size, self._replies
        if self._lost > size - (size + 1) // 2:  # most of the round failed: it says nothing
            self._new_round()
            return
        if count < (size + 1) // 2:
            return
        mean = self._rtt_sum / count
        variance = max(0.0, self._rtt_squares / count - mean * mean) * count / (count - 1)
        level = Level(
            self.limit, self._n_sum / self._round_sent, mean, math.sqrt(variance / count) / mean
        )
        self._new_round()
        self._decide(level)

    def _decide(self, level: Level) -> None:
        base, probe = self._base, self._probe
        if base is None:
            self._base = level
            if self._startup:
                self._probe_up(level)
            return
        if probe is None:
            self._hold(base, level)
            return
        if self._noise > max(base.error, level.error):
            base = dataclasses.replace(base, error=max(base.error, self._noise))
            level = dataclasses.replace(level, error=max(level.error, self._noise))
        measured = elasticity(base, level)
        self._probe = None
        if measured is None:  # the limit was not filled: nothing learned
            self._revert(base)
            return
        gain, error = measured
        if probe == "up":
            # While starting, growth goes on unless the round says clearly that it bought
            # nothing; later a higher limit is kept only for a gain beyond the noise.
            if gain + (error if self._startup else -MARGIN * error) >= KEEP:
                self._base, self._gain = level, min(1.0, gain)
                self._probe_up(level)
                return
            self._startup, self._gain = False, max(0.0, gain)
            self._revert(base)
            if gain < QUEUEING and base.limit != self._knee:
                self._probe_down(base)  # the higher limit only queued: try a lower one
        elif gain <= QUEUEING:  # a lower limit cost (almost) nothing: keep it
            self._base = level
            self._probe_down(level)
        else:  # the server needs the higher limit: no need to ask again
            self._knee = base.limit
            self._revert(base)

    def _hold(self, base: Level, level: Level) -> None:
        self._held += 1
        slowed = level.latency_s * (1 - 2 * level.error) > DRIFT * base.latency_s
        capped = level.latency_s > self.latency_cap_s
        if slowed or capped:
            # the server slowed at this limit (or nears the timeout): measure from here
            self._base, self._knee = level, None
            self._probe_down(level, 1 if capped else FLOOR)
            return
        stray = level.rate / base.rate - 1
        self._noise = math.sqrt(0.8 * self._noise**2 + 0.2 * stray**2)
        # follow the server slowly: the level a probe is measured against
        self._base = Level(
            base.limit,
            (base.in_flight + level.in_flight) / 2,
            (base.latency_s + level.latency_s) / 2,
        )
        if self._held >= HOLD_ROUNDS:
            self._probe_up(self._base)

    def _probe_up(self, base: Level) -> None:
        """Probe a higher limit: x2 while starting (x4 on a flat latency), else x
        ``STEP``; never where the latency expected from the last elasticity (pure
        queueing before any is measured) would pass ``latency_cap_s``."""
        self._held = 0
        if self._startup:  # x4 once the latency has stayed flat from 2 to 4 and beyond
            factor = 4.0 if self._gain >= FLAT and base.limit > START else 2.0
        else:
            factor = STEP
        target = min(self.ceiling, max(base.limit + 1, math.ceil(base.limit * factor)))
        queued = 1.0 - self._gain  # the share of added concurrency expected to queue
        while target > base.limit and queued > 0:
            expected = base.latency_s * (1 + queued * (target / base.limit - 1))
            if expected <= self.latency_cap_s:
                break
            target -= 1
        if target <= base.limit:
            self._startup = False
            return
        self._probe = "up"
        self._set(target)

    def _probe_down(self, base: Level, floor: int = FLOOR) -> None:
        """Probe half the limit, not below ``floor``: with fewer requests than slots in
        flight a slot idles while each reply travels back and the next request comes."""
        self._held = 0
        target = max(min(floor, self.ceiling), base.limit // 2)
        if target >= base.limit:
            return
        self._probe = "down"
        self._set(target)

    def _revert(self, base: Level) -> None:
        self._held = 0
        self._set(base.limit)

    def _set(self, limit: int) -> None:
        self.limit = limit
        self._new_round()
        self._settle = self._round_size  # the queue settles at the new limit first
        self._wake()

    def _new_round(self) -> None:
        self._round += 1
        self._round_size = max(ROUND_MIN, self.limit)
        self._round_sent = self._replies = self._lost = 0
        self._n_sum = self._rtt_sum = self._rtt_squares = 0.0


# -- what a self-hosted server says about its slots ------------------------------------

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
