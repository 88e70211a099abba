"""The adaptive concurrency limit against simulated servers on a fake clock.

Each test runs a discrete-event simulation: requests go out while the limit lets them,
a server answers them (one that queues past its slots, or one whose latency stays flat
however many it holds), the fake clock jumps to the next reply, and the limit is told
what the executor would tell it. Seeded, so every run sees the same server; no wall-clock.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from judge_helpers import FakeClock

from gamut_eval.judge._backend_online import judge_in_order
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._concurrency import FLOOR, ROUND_MIN, START, AdaptiveLimit
from gamut_eval.judge._prompt import render_response
from gamut_eval.judge._resolve import resolve_endpoint
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.testing import FakeOpenAIServer, RequestContext, verdict_json

Service = Callable[[random.Random], float]


def around(seconds: float) -> Service:
    """Service times within 20% of ``seconds``."""
    return lambda rng: rng.uniform(0.8 * seconds, 1.2 * seconds)


def spread(seconds: float, sigma: float) -> Service:
    """Log-normal service times with median ``seconds`` (long tails, like reply lengths)."""
    return lambda rng: seconds * rng.lognormvariate(0, sigma)


@dataclass
class Run:
    """What a simulation saw, request by request in the order they came back."""

    limits: list[int] = field(default_factory=list)
    """The limit after each reply."""
    in_flight: list[int] = field(default_factory=list)
    """Requests in flight when each request was sent (itself included)."""
    latencies: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.elapsed_s

    @property
    def held(self) -> int:
        """The limit most replies came back under (probes aside)."""
        return Counter(self.limits).most_common(1)[0][0]

    def tail(self, share: float = 0.25) -> Run:
        """The last ``share`` of the replies."""
        cut = int(len(self.latencies) * (1 - share))
        return Run(self.limits[cut:], self.in_flight[cut:], self.latencies[cut:])


def simulate(limit: AdaptiveLimit, service: Service, requests: int, slots: int | None) -> Run:
    """``requests`` sent through ``limit`` to a server that serves ``slots`` at once in
    arrival order and queues the rest (``None``: every request served at once, so its
    latency is its service time however many are in flight)."""
    clock, rng, run = FakeClock(), random.Random(7), Run()
    replies: list[tuple[float, int]] = []  # (clock time, request)
    waiting: deque[int] = deque()
    sent_at: dict[int, tuple[float, int, int]] = {}
    busy = sent = 0

    def serve(request: int) -> None:
        nonlocal busy
        busy += 1
        heapq.heappush(replies, (clock.now + service(rng), request))

    while len(run.latencies) < requests:
        while limit.in_flight < limit.limit and sent < requests:
            limit.in_flight += 1  # what acquire() does when a slot is free
            sent_at[sent] = (clock.now, limit.in_flight, limit.sent())
            if slots is None or busy < slots:
                serve(sent)
            else:
                waiting.append(sent)
            sent += 1
        clock.now, request = heapq.heappop(replies)
        busy -= 1
        if waiting:
            serve(waiting.popleft())
        started, in_flight, ticket = sent_at.pop(request)
        limit.in_flight -= 1  # release()
        limit.on_reply(ticket, clock.now - started)
        run.limits.append(limit.limit)
        run.in_flight.append(in_flight)
        run.latencies.append(clock.now - started)
    run.elapsed_s = clock.elapsed
    return run


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_a_one_slot_server_is_fed_two_at_a_time() -> None:
    # llama.cpp with one slot: past two in flight (one served, one waiting, so the slot
    # never idles while a reply travels) requests only wait.
    run = simulate(AdaptiveLimit(64, latency_cap_s=60), around(1.0), 400, slots=1)
    assert max(run.in_flight) <= 2 * START  # the start's one doubling, no further
    late = run.tail()
    assert late.held == FLOOR == 2
    assert max(late.limits) <= 2 * FLOOR  # a probe upwards now and then
    assert mean(late.latencies) <= 3.0
    assert run.rate >= 0.95  # the server was never left idle: 1 reply a second


@pytest.mark.parametrize("start", [16, 64])
def test_the_limit_comes_down_to_a_one_slot_server_from_any_start(start: int) -> None:
    # A server that names more slots than it serves, or one fed the whole --concurrency
    # (brought down by its latency nearing half the timeout).
    limit = AdaptiveLimit(64, start=start, latency_cap_s=60)
    run = simulate(limit, around(1.0), 600, slots=1)
    late = run.tail()
    assert late.held == 2
    assert mean(late.latencies) <= 3.0


def test_a_four_slot_server_is_fed_about_four() -> None:
    run = simulate(AdaptiveLimit(64, latency_cap_s=60), around(1.0), 1000, slots=4)
    late = run.tail()
    assert late.held == 4
    assert max(late.limits) <= 8
    assert run.rate >= 0.9 * 4  # four replies a second when all four slots are busy


def test_a_flat_latency_server_is_fed_the_whole_concurrency() -> None:
    # A hosted API: latency does not grow with the requests in flight.
    run = simulate(AdaptiveLimit(64, latency_cap_s=60), spread(1.0, 0.5), 5000, slots=None)
    reached = run.limits.index(64)
    assert reached < 400  # a few round trips, not minutes
    after = run.limits[reached:]
    assert sum(limit == 64 for limit in after) >= 0.97 * len(after)


def test_a_hosted_api_started_at_the_ceiling_is_never_slowed() -> None:
    limit = AdaptiveLimit(64, start=64, latency_cap_s=60)
    run = simulate(limit, spread(1.0, 0.5), 5000, slots=None)
    assert set(run.limits) == {64}
    fixed = simulate(AdaptiveLimit(64, adaptive=False), spread(1.0, 0.5), 5000, slots=None)
    assert run.rate == pytest.approx(fixed.rate)


def test_a_server_that_batches_is_fed_until_it_stops_gaining() -> None:
    # Sixteen slots: throughput grows up to sixteen in flight, then only latency does.
    run = simulate(AdaptiveLimit(64, latency_cap_s=60), around(1.0), 3000, slots=16)
    late = run.tail()
    assert late.held == 16
    assert run.rate >= 0.9 * 16


def test_probes_stay_under_the_latency_cap() -> None:
    # One slot, twenty seconds a reply, a 60 s cap (half a 120 s timeout): pure queueing
    # at four in flight would mean 80 s, so the start never doubles to four.
    limit = AdaptiveLimit(64, latency_cap_s=60)
    run = simulate(limit, around(20.0), 80, slots=1)
    assert max(run.in_flight) <= 3
    assert max(run.latencies) <= 0.6 * 120  # nowhere near the timeout


def test_fixed_concurrency_ignores_latency() -> None:
    limit = AdaptiveLimit(8, adaptive=False)
    run = simulate(limit, around(1.0), 200, slots=1)
    assert set(run.limits) == {8}
    assert max(run.in_flight) == 8


def test_a_429_halves_the_limit_and_the_limit_measures_again_from_there() -> None:
    limit = AdaptiveLimit(64, start=64)
    epoch = limit.epoch
    for _ in range(10):  # one burst: all sent before the first 429 came back
        limit.on_throttle(epoch)
    assert limit.limit == 32
    run = simulate(limit, spread(1.0, 0.5), 3000, slots=None)
    assert run.tail().limits[-1] == 64  # a flat server: back up by probing


def test_replies_to_requests_sent_under_an_older_limit_are_not_measured() -> None:
    limit = AdaptiveLimit(64)
    first = [limit.sent() for _ in range(ROUND_MIN)]
    assert len(set(first)) == 1
    assert first[0] > 0
    assert limit.sent() == -1  # past the round: not measured
    for _ in range(ROUND_MIN):
        limit.on_reply(first[0] - 1, 100.0)  # replies from an older round change nothing
    assert limit.limit == START
    for ticket in first[: ROUND_MIN // 2]:  # half the round came back
        limit.on_reply(ticket, 1.0)
    assert limit.limit == 2 * START  # the start doubles
    settling = [limit.sent() for _ in range(ROUND_MIN)]
    assert settling == [-1] * len(settling)  # the queue settles at the new limit first
    assert limit.sent() > first[0]


# -- through the client and a fake server on the same fake clock ---------------------------


async def test_the_client_feeds_a_server_that_queues_at_its_pace() -> None:
    # The fake server's replies wait on the fake clock, and each wait moves it for all:
    # n requests held at once take n seconds of it, as on a server with one slot.
    clock = FakeClock()
    held: list[int] = []

    def policy(request: dict[str, Any], ctx: RequestContext) -> str:
        held.append(sum(r.status is None for r in server.requests))
        return verdict_json("meets", "ok")

    settings = JudgeSettings(judge="openai-api/fake/fake-judge", max_reasks=0)  # 64
    server = FakeOpenAIServer(policy=policy, latency_ms=1000, sleep=clock.sleep)
    async with server:
        endpoint = resolve_endpoint("openai/fake-judge", base_url=server.base_url, api_key="k")
        async with OpenAIExecutor(endpoint, settings, clock=clock, sleep=clock.sleep) as judge:
            plan = [
                (
                    render_response(f"Q{a}?", f"A{a}."),
                    [(f"k{a}-{c}", f"C{a}-{c}") for c in range(20)],
                )
                for a in range(6)
            ]
            rows: list[StoredVerdict] = []
            await judge_in_order(judge, plan, settings, rows.append)
    assert len(rows) == 120
    assert max(held) <= 2 * START  # never more than the start's one doubling
    late = held[-40:]
    assert Counter(late).most_common(1)[0][0] <= 2  # one served, one waiting
    assert sum(late) / len(late) <= 2.5  # a probe upwards aside
