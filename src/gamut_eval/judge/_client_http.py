"""The transport the HTTP judge clients share: one aiohttp session, limits, retries.

``HttpExecutor`` owns everything that does not depend on the provider's wire format: the
``ClientSession`` (created lazily inside the running loop, its connector sized to the
concurrency, connections kept alive), the adaptive concurrency limit (``_concurrency.py``:
latency and 429s set it; a self-hosted server's own slot count says where it starts),
the request and token buckets, the server-requested pause after a 429's ``Retry-After``,
exponential backoff with full jitter, and the loop that sends one body until it
succeeds, is refused or runs out of retries. A subclass says how a body is written
(``_encode``), how a 200 reply is read (``_read``) and how an error reply is
classified (``_failure``):
``OpenAIExecutor`` for OpenAI's chat completions (``_client_openai.py``),
``AnthropicExecutor`` for Anthropic's Messages API, ``GeminiExecutor`` for Gemini's
``generateContent``.

Flow control (docs/reliability.md, judge output faults): a 429 (and a timeout) halves
the adaptive concurrency limit, which latency then moves (``_concurrency.py``), once per
burst: 429s to requests sent before the last decrease, or within the ``Retry-After`` that
decrease waited for, do not halve it again. The throttled request itself waits its
``Retry-After`` (up to ``retry_after_cap_s``; a longer one is not waited out, the request
is retried on the usual backoff) without holding its slot, so the other requests go on
at the lowered limit instead of all waiting in turn. A wait longer than ``WAIT_SHOWN_S``
is told to the user (``on_wait``).

An endpoint whose every request has failed (timeouts, server errors, lost connections;
not 429s, not refusals) for ``dead_after_s``, counted from the first of them sent after
its last reply, ends the call with ``JudgeStalled``, which stops the pass (what was
judged is kept).

Leaving kindly: a call that is cancelled (the run stops, or the user interrupts it) or
times out closes its connection at once, which is all a client can say to a server that
a reply is no longer wanted; what the server does then is its own (docs/scaling.md, what
an abandoned request costs).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import math
import random
import time
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Self

import aiohttp
from yarl import URL

from gamut_eval.errors import InputError
from gamut_eval.judge._client import (
    ChatMessage,
    Completion,
    JudgeAuthError,
    JudgeRequestRejected,
    JudgeServerGone,
    JudgeStalled,
    JudgeUnavailable,
)
from gamut_eval.judge._concurrency import START, AdaptiveLimit, ServerSlots, hosted_api
from gamut_eval.judge._prompt import estimated_tokens
from gamut_eval.judge._resolve import Endpoint
from gamut_eval.judge._settings import JudgeSettings


class TokenBucket:
    """Requests-or-tokens per minute, with a burst of one second's worth.

    Virtual scheduling: ``reserve`` books the tokens at once (the level may go negative) and
    returns how long the caller must wait for them, so waiters need no lock and are served
    in booking order. A single cost above the burst size waits for a full bucket rather
    than forever. ``clock`` is the monotonic clock the bucket refills by (tests pass a fake
    one to check the waits it computes).
    """

    __slots__ = ("_capacity", "_clock", "_level", "_rate", "_stamp")

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = per_minute / 60.0
        self._capacity = max(1.0, self._rate)
        self._level = self._capacity
        self._clock = clock
        self._stamp = clock()

    def reserve(self, cost: float) -> float:
        now = self._clock()
        self._level = min(self._capacity, self._level + (now - self._stamp) * self._rate)
        self._stamp = now
        need = min(cost, self._capacity)
        wait = max(0.0, need - self._level) / self._rate
        self._level -= cost
        return wait


def json_body(body: Any) -> bytes:
    """A request body as compact JSON bytes."""
    return json.dumps(body, separators=(",", ":")).encode()


RETRY_AFTER_MAX_S = 86_400.0
"""The most a ``Retry-After`` is read as (a day): an HTTP date years ahead, or a number of
seconds past any clock, is read as this; the executor's own cap
(``retry_after_cap_s``) then decides whether it is waited out."""
WAIT_SHOWN_S = 5.0
"""A server-requested wait longer than this is shown to the user while it lasts."""


def retry_after_s(headers: Mapping[str, str], cap: float = RETRY_AFTER_MAX_S) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or HTTP date),
    at most ``cap``; None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            value = float(millis) / 1000
            if math.isfinite(value):
                return min(cap, max(0.0, value))
    raw = headers.get("Retry-After")
    if raw is None:
        return None
    with contextlib.suppress(ValueError):
        value = float(raw)
        return min(cap, max(0.0, value)) if math.isfinite(value) else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        ahead = (when - datetime.now(UTC)).total_seconds()
    except OverflowError:
        return cap
    return min(cap, max(0.0, ahead))


def with_bound(settings: JudgeSettings, max_tokens: int | None) -> JudgeSettings:
    """``settings`` with the reply bound ``max_tokens`` instead of its own (when given)."""
    if max_tokens is None:
        return settings
    return settings.model_copy(update={"max_tokens": max_tokens})


def env_proxy(url: URL) -> tuple[URL | None, dict[str, str] | None]:
    """The ``HTTP(S)_PROXY`` / ``NO_PROXY`` decision for ``url``, made once: proxy, headers.

    ``ClientSession(trust_env=True)`` would redo this lookup on every request, which
    measured about 0.2 ms of CPU per call: as much as the rest of the call put together.
    """
    if url.host is None or urllib.request.proxy_bypass(url.host):
        return None, None
    raw = urllib.request.getproxies().get(url.scheme)
    if not raw:
        return None, None
    proxy = URL(raw)
    if proxy.user is None:
        return proxy, None
    # aiohttp deprecates BasicAuth objects; the header is what it would have sent.
    secret = base64.b64encode(f"{proxy.user}:{proxy.password or ''}".encode()).decode()
    return proxy.with_user(None), {"Proxy-Authorization": f"Basic {secret}"}


@dataclass(frozen=True, slots=True)
class FastStats:
    """A snapshot of the executor's counters, for progress bars and run summaries."""

    requests_sent: int
    """HTTP attempts started (retries included)."""
    retries: int
    rate_limited: int
    """HTTP 429 replies received."""
    concurrency_limit: int
    """The adaptive in-flight limit now in force."""
    in_flight: int
    """Calls holding a concurrency slot (sending, or backing off after a failure)."""
    completed: int
    failed: int
    waiting: int = 0
    """Calls waiting out a server's ``Retry-After`` (their slots given back meanwhile)."""


@dataclass(slots=True, kw_only=True)
class Transient:
    """A failed attempt that may succeed if retried (allocated only on failure)."""

    reason: str = field(kw_only=False)
    throttled: bool = False
    retry_after_s: float | None = None
    lost: bool = False
    """The server closed the connection without a reply or refused a new one (no HTTP
    reply at all), the signs of a server that crashed or was stopped."""
    timed_out: bool = False
    """No reply within the timeout, the sign of a server that holds more than it can
    answer in time."""


@dataclass(frozen=True, slots=True)
class Refused:
    """The provider refused the request itself (400, 404, 422, or a 5xx that says the
    request is invalid): sent again unchanged it fails again."""

    status: int
    message: str

    @property
    def reason(self) -> str:
        return f"HTTP {self.status}: {self.message}"


_MAX_CORRECTIONS = 4
"""Shape corrections one request may go through (each changes one parameter)."""


def describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "the request timed out"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection without replying"
    if isinstance(exc, aiohttp.ClientConnectorError):
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        cause = "connection refused" if refused else describe(exc.os_error)
        return f"cannot connect to {exc.host}:{exc.port} ({cause})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _lost(exc: BaseException) -> bool:
    """No HTTP reply: the connection was closed under the request (or reset), or refused."""
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientConnectorError):
        return True
    return isinstance(exc, aiohttp.ClientOSError) and exc.errno in (errno.ECONNRESET, errno.EPIPE)


class HttpExecutor:
    """The shared transport of the fast judge clients (``Executor`` protocol).

    Use as ``async with Client(endpoint, settings) as judge`` or call ``aclose()``. Of
    ``settings`` it reads the transport fields (concurrency, rpm, tpm, timeout, retries,
    backoff). One instance serves any number of concurrent ``complete`` calls; calls
    beyond the (adaptive) concurrency limit wait their turn in arrival order.

    ``clock`` (monotonic seconds) and ``sleep`` are what the rate buckets, the
    ``Retry-After`` pause and the backoff wait by; tests pass fakes to check the waits
    computed without spending them.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        settings: JudgeSettings | None,
        url: str,
        headers: dict[str, str],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.judge_id = endpoint.judge_id
        self.endpoint = endpoint
        self.config = config = settings or JudgeSettings(judge=endpoint.judge_id)
        self._url = URL(url)
        if not self._url.absolute or self._url.scheme not in ("http", "https"):
            raise InputError(
                f"judge base URL {endpoint.base_url!r} must start with http:// or https://"
            )
        self._headers = headers
        self._timeout = aiohttp.ClientTimeout(total=config.timeout_s)
        self._proxy, self._proxy_headers = env_proxy(self._url)
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._clock = clock
        self._sleep = sleep
        self._limit = AdaptiveLimit(
            config.concurrency,
            adaptive=config.adaptive_concurrency,
            # a hosted API's latency stays flat: fed in full from the start
            start=config.concurrency if hosted_api(endpoint.base_url) else START,
            latency_cap_s=config.timeout_s / 2,
        )
        self._prepared = False
        self._preparing = asyncio.Lock()
        self._rpm = TokenBucket(config.rpm, clock) if config.rpm else None
        self._tpm = TokenBucket(config.tpm, clock) if config.tpm else None
        self._calm_until = 0.0
        """clock() before which a 429 does not lower the limit again: the decrease that
        waited for a ``Retry-After`` already answered the burst it belongs to."""
        self._waiting = 0
        self._over_cap_noted = False
        self._failing_since: float | None = None
        """clock() when the first attempt that failed since the endpoint's last reply was
        sent (None while replies come): ``dead_after_s`` is counted from there, so time
        spent sending nothing (cached checks, a pause) never counts."""
        self._failing = 0
        """Failed attempts (not 429s, not refusals) since the last reply."""
        self._sent = self._retries = self._throttled = self._completed = self._failed = 0
        self.on_note: Callable[[str], object] | None = None
        """Told what the user should know (a request shape corrected, a wait past the
        cap); the pass shows it."""
        self.on_wait: Callable[[float, str], object] | None = None
        """Told each wait longer than ``WAIT_SHOWN_S``: how long, and why (the pass
        shows it on the progress line)."""
        self.on_room: Callable[[], object] | None = None
        """Told when a call gives its slot back to wait out a ``Retry-After``: a caller
        that keeps ``window`` calls going may start another."""
        self._replied = False
        """Whether the server ever sent an HTTP reply: only a server that answered before
        can be gone (one never reached is the probe's to name)."""

    # -- what a wire format supplies ----------------------------------------------------

    def _encode(
        self, messages: list[ChatMessage], structured: bool, max_tokens: int | None = None
    ) -> tuple[bytes, int]:
        """The body, and the version of the request shape it was written in
        (``max_tokens``: the reply bound instead of the setting's)."""
        raise NotImplementedError

    def _read(self, payload: Any, latency_s: float, attempt: int) -> Completion | str | None:
        """A 200 reply's JSON (None when it is not JSON) as a ``Completion``; a reason
        starting ``content policy`` when the provider filtered it; else not a reply."""
        raise NotImplementedError

    def _failure(
        self, status: int, raw: bytes, headers: Mapping[str, str], attempt: int
    ) -> Transient | Refused:
        """Classify a non-200 reply: retryable, refused (the request itself), or raise."""
        raise NotImplementedError

    def _adapt(self, refused: Refused, version: int) -> bool:
        """Whether a refused request can be sent again in another shape (default: no)."""
        return False

    async def _server_slots(self, session: aiohttp.ClientSession) -> ServerSlots | None:
        """What the server says about its slots (default: nothing is asked)."""
        return None

    # -- lifecycle ----------------------------------------------------------------------

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError(f"the judge executor for {self.judge_id} is closed")
        # Created lazily: a ClientSession must be made inside the running event loop.
        connector = aiohttp.TCPConnector(limit=self.config.concurrency, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self._headers,
            timeout=self._timeout,
        )
        return self._session

    async def prepare(self) -> None:
        """Ask the server, once, what it says about its slots, and start the limit there
        (``_concurrency.ServerSlots``); calls wait for the first. ``complete`` calls it."""
        if self._prepared:
            return
        async with self._preparing:
            if self._prepared:
                return
            try:
                found = await self._server_slots(self._session or self._open())
            finally:
                self._prepared = True
            start = found.start(self._limit.ceiling) if found else None
            if found is not None and start is not None:
                self._limit.hint(start)
                self._noted(
                    f"{self.judge_id} at {self.endpoint.base_url}: the server's "
                    f"{found.source} says {_capacity(found)}; starting at {start} in flight"
                )

    def _noted(self, message: str) -> None:
        """A message for the user (``on_note``: the pass shows it)."""
        if self.on_note is not None:
            self.on_note(message)

    @property
    def window(self) -> int:
        """Calls that may hold a slot now (the adaptive limit): a caller that keeps this
        many in flight never waits in the limit's queue, so it decides their order."""
        return self._limit.limit

    @property
    def waiting(self) -> int:
        """Calls waiting out a server's ``Retry-After``, their slots given back: a caller
        keeping ``window`` calls going does not count them."""
        return self._waiting

    async def aclose(self) -> None:
        """Close the connection pool; later calls raise ``RuntimeError``."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def stats(self) -> FastStats:
        """Counters since this executor was created."""
        return FastStats(
            requests_sent=self._sent,
            retries=self._retries,
            rate_limited=self._throttled,
            concurrency_limit=self._limit.limit,
            in_flight=self._limit.in_flight,
            completed=self._completed,
            failed=self._failed,
            waiting=self._waiting,
        )

    # -- one call -----------------------------------------------------------------------

    async def complete(
        self,
        messages: list[ChatMessage],
        response_format: dict[str, Any] | None,
        *,
        max_tokens: int | None = None,
    ) -> Completion:
        """One judge reply; raises ``JudgeCallError`` subclasses or ``JudgeAuthError``.

        ``response_format`` None sends no structured output; otherwise the verdict schema
        is asked for in the form the endpoint takes, where it takes one. ``max_tokens``
        replaces the setting's reply bound for this call (a re-ask after a cut reply)."""
        if not self._prepared:
            await self.prepare()
        cost = estimated_tokens(messages, self.config.max_tokens) if self._tpm else 0.0
        # The slot is held across retries and their backoff: a call that is backing off
        # still counts against the limit, so failures really do lower the request rate.
        # Only a server-requested wait (Retry-After) gives it back meanwhile (``_wait_out``).
        slot = _Slot(self._limit)
        await slot.take()
        try:
            completion = await self._call(
                messages, response_format is not None, cost, slot, max_tokens
            )
        except Exception:
            self._failed += 1
            raise
        finally:
            slot.give()
        self._completed += 1
        return completion

    async def _call(
        self,
        messages: list[ChatMessage],
        structured: bool,
        cost: float,
        slot: _Slot,
        max_tokens: int | None = None,
    ) -> Completion:
        session = self._session or self._open()
        attempts = self.config.max_retries + 1
        failure: Transient | None = None
        body, version = self._encode(messages, structured, max_tokens)
        corrections = attempt = 0
        lost = self._replied  # and, below, every attempt ended without an HTTP reply
        while attempt < attempts:
            attempt += 1
            if failure is not None:
                self._retries += 1
                wait = self._backoff_s(attempt - 1, failure)
                if failure.retry_after_s:
                    await self._wait_out(wait, failure, slot)
                else:
                    await self._sleep(wait)
            await self._admit(cost)
            limit = self._limit
            epoch, ticket = limit.epoch, limit.sent()
            self._sent += 1
            sent_at = self._clock()
            outcome = await self._attempt(session, body, attempt)
            if isinstance(outcome, Completion):
                limit.on_reply(ticket, outcome.latency_s)
                self._failing_since, self._failing = None, 0
                return outcome
            limit.on_lost(ticket)
            if isinstance(outcome, Refused):
                if corrections < _MAX_CORRECTIONS and self._adapt(outcome, version):
                    # the request itself changes: not a retry, and no backoff
                    corrections += 1
                    attempt, failure = attempt - 1, None
                    body, version = self._encode(messages, structured, max_tokens)
                    continue
                raise JudgeRequestRejected(outcome.reason, attempt)
            failure = outcome
            lost = lost and failure.lost
            self._cap_wait(failure)
            if failure.throttled:
                self._on_throttle(failure, epoch)
            else:
                if failure.timed_out:
                    limit.on_throttle(epoch)  # it held more than it could answer in time
                self._check_alive(failure, sent_at)
        assert failure is not None
        if lost:
            raise JudgeServerGone(
                f"the judge server at {self.endpoint.base_url} closed the connection and "
                f"refused new ones through {attempts} attempts (did it crash or stop?): "
                f"{failure.reason}"
            )
        unavailable = JudgeUnavailable(
            f"{failure.reason} (gave up after {attempts} attempts)", attempts
        )
        unavailable.throttled = failure.throttled
        raise unavailable

    def _check_alive(self, failure: Transient, sent_at: float) -> None:
        """End the call when every attempt since the endpoint's last reply failed, for
        ``dead_after_s`` or more: the judge stopped working."""
        self._failing += 1
        if self._failing_since is None:
            self._failing_since = sent_at
        silent = self._clock() - self._failing_since
        if silent < self.config.dead_after_s:
            return
        raise JudgeStalled(
            f"the judge {self.judge_id} at {self.endpoint.base_url} stopped working: every "
            f"request for {silent:.0f} s failed ({self._failing:,} attempts, the last: "
            f"{failure.reason}); dead_after_s waits longer",
            setting="dead_after_s",
        )

    async def _wait_out(self, wait: float, failure: Transient, slot: _Slot) -> None:
        """A server-requested wait: the slot is given back meanwhile (the limit, lowered
        by the 429, keeps the other requests going), and a long one is shown."""
        if wait > WAIT_SHOWN_S and self.on_wait is not None:
            self.on_wait(wait, failure.reason)
        slot.give()
        self._waiting += 1
        if self.on_room is not None:
            self.on_room()
        try:
            await self._sleep(wait)
        finally:
            self._waiting -= 1
        await slot.take()

    async def _admit(self, cost: float) -> None:
        """Wait for the client-side rate limits."""
        for bucket, need in ((self._rpm, 1), (self._tpm, cost)):
            wait = bucket.reserve(need) if bucket is not None else 0.0
            if wait:
                await self._sleep(wait)

    def _backoff_s(self, retry: int, failure: Transient) -> float:
        """Full jitter: uniform in [0, min(max, base * 2**(retry-1))], after any Retry-After."""
        config = self.config
        ceiling = min(config.backoff_max_s, config.backoff_base_s * 2 ** (retry - 1))
        return (failure.retry_after_s or 0.0) + random.uniform(0, ceiling)

    def _cap_wait(self, failure: Transient) -> None:
        """A ``Retry-After`` past ``retry_after_cap_s`` is not waited out: the request is
        retried on the usual backoff (told to the user once)."""
        cap = self.config.retry_after_cap_s
        if failure.retry_after_s is None or failure.retry_after_s <= cap:
            return
        if not self._over_cap_noted:
            self._over_cap_noted = True
            self._noted(
                f"{self.judge_id} at {self.endpoint.base_url} asked to wait "
                f"{failure.retry_after_s:,.0f} s (Retry-After), past retry_after_cap_s "
                f"({cap:g} s): its requests are retried on the usual backoff instead, "
                "within max_retries"
            )
        failure.retry_after_s = None

    def _on_throttle(self, failure: Transient, epoch: int) -> None:
        self._throttled += 1
        now = self._clock()
        if now < self._calm_until:
            return  # the decrease that waited for the last Retry-After answered this burst
        before = self._limit.epoch
        self._limit.on_throttle(epoch)
        if self._limit.epoch != before and failure.retry_after_s:
            self._calm_until = now + failure.retry_after_s

    async def _attempt(
        self, session: aiohttp.ClientSession, body: bytes, attempt: int
    ) -> Completion | Transient | Refused:
        started = self._clock()
        try:
            async with session.post(
                self._url, data=body, proxy=self._proxy, proxy_headers=self._proxy_headers
            ) as response:
                # read() raises if the connection ends before Content-Length bytes arrive,
                # so a body cut off mid-way is never handed to the parser.
                raw = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            timed_out = isinstance(exc, TimeoutError)
            return Transient(describe(exc), lost=_lost(exc), timed_out=timed_out)
        self._replied = True
        if status == 200:
            return self._completion(raw, self._clock() - started, attempt)
        return self._failure(status, raw, response.headers, attempt)

    def _completion(self, raw: bytes, latency_s: float, attempt: int) -> Completion | Transient:
        """A 200 reply as a ``Completion``, or a retryable failure (or raise)."""
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None  # the wire's reader says why
        outcome = self._read(payload, latency_s, attempt)
        if isinstance(outcome, Completion):
            return outcome
        if isinstance(outcome, str) and outcome.startswith("content policy"):
            raise JudgeRequestRejected(outcome, attempt)
        # Some gateways answer 200 with an error object or an incomplete body: try again.
        return Transient(f"the judge endpoint sent an unusable 200 reply: {raw[:200]!r}")

    def _auth_error(self, status: int, message: str) -> JudgeAuthError:
        env = self.endpoint.api_key_env
        if self.endpoint.api_key:
            what = f"the judge endpoint rejected the API key (HTTP {status}); set {env}"
        else:
            what = f"the judge endpoint wants an API key (HTTP {status}); set {env}"
        return JudgeAuthError(f"{what} [{self.judge_id} at {self.endpoint.base_url}: {message}]")


class _Slot:
    """One call's hold on a slot of the limit, given back and taken again around a
    server-requested wait; released once however the call ends."""

    __slots__ = ("_held", "_limit")

    def __init__(self, limit: AdaptiveLimit) -> None:
        self._limit = limit
        self._held = False

    async def take(self) -> None:
        await self._limit.acquire()
        self._held = True

    def give(self) -> None:
        if self._held:
            self._held = False
            self._limit.release()


def _capacity(found: ServerSlots) -> str:
    if found.slots is not None:
        return f"it serves {found.slots} request{'s' * (found.slots != 1)} at once"
    return "it batches requests and has none waiting"
