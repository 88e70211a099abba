"""A throttling server: Retry-After is honoured up to a cap, a throttle lowers the limit
instead of holding every request back, and a long wait is shown while it lasts."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from email.utils import formatdate
from typing import Any

import pytest
from judge_helpers import JUDGE, FakeClock, StartServer, Workspace, settings
from test_judge_fast import MESSAGES, QUICK, REPLY, Reply, endpoint_for, on_clock, scripted

from gamut_eval.judge import probe_judges, resolve_judge
from gamut_eval.judge._client_http import RETRY_AFTER_MAX_S, WAIT_SHOWN_S, retry_after_s
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._prompt import render_messages, render_response
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.testing import FakeOpenAIServer, FaultRule, RequestContext

THROTTLED = {"error": {"message": "Rate limit reached (fake)."}}


# -- reading Retry-After ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        formatdate(time.time() + 5 * 365 * 86_400, usegmt=True),  # five years ahead
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "1e12",
        "86401",
    ],
)
def test_a_retry_after_far_ahead_is_read_as_at_most_a_day(value: str) -> None:
    assert retry_after_s({"Retry-After": value}) == RETRY_AFTER_MAX_S == 86_400


def test_retry_after_is_read_up_to_the_cap_given() -> None:
    assert retry_after_s({"Retry-After": "120"}, cap=60) == 60
    assert retry_after_s({"Retry-After": "12"}, cap=60) == 12
    assert retry_after_s({"retry-after-ms": "1500"}, cap=1) == 1


# -- waiting it out ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["3600", formatdate(time.time() + 3 * 365 * 86_400, usegmt=True)])
async def test_a_retry_after_past_the_cap_is_not_waited_out_and_is_told(value: str) -> None:
    replies: list[Reply] = [(429, THROTTLED, {"Retry-After": value}), (200, None)]
    notes: list[str] = []
    clock = FakeClock()
    async with scripted(replies) as (url, log), on_clock(url, QUICK, clock) as judge:
        judge.on_note = notes.append
        completion = await judge.complete(MESSAGES, None)
    assert completion.text == REPLY
    assert len(log) == 2
    # retried on the usual backoff: the first step's ceiling, not an hour (or years)
    assert clock.elapsed <= QUICK.backoff_base_s
    assert len(notes) == 1
    assert "retry_after_cap_s (60 s)" in notes[0]
    assert ("3,600 s" if value == "3600" else "86,400 s") in notes[0]


async def test_the_cap_is_a_setting() -> None:
    replies: list[Reply] = [(429, THROTTLED, {"Retry-After": "90"}), (200, None)]
    clock = FakeClock()
    settings = QUICK.model_copy(update={"retry_after_cap_s": 120.0})
    async with scripted(replies) as (url, _), on_clock(url, settings, clock) as judge:
        await judge.complete(MESSAGES, None)
    assert 90 <= clock.elapsed <= 90 + QUICK.backoff_base_s


async def test_a_long_wait_within_the_cap_is_waited_out_and_shown() -> None:
    replies: list[Reply] = [(429, THROTTLED, {"Retry-After": "30"}), (200, None)]
    waits: list[tuple[float, str]] = []
    clock = FakeClock()
    async with scripted(replies) as (url, _), on_clock(url, QUICK, clock) as judge:
        judge.on_wait = lambda seconds, why: waits.append((seconds, why))
        await judge.complete(MESSAGES, None)
    assert 30 <= clock.elapsed <= 30 + QUICK.backoff_base_s
    assert len(waits) == 1
    assert 30 <= waits[0][0] <= 30 + QUICK.backoff_base_s
    assert waits[0][1].startswith("HTTP 429")


async def test_a_short_wait_is_not_shown() -> None:
    replies: list[Reply] = [(429, THROTTLED, {"Retry-After": str(WAIT_SHOWN_S / 2)}), (200, None)]
    waits: list[tuple[float, str]] = []
    clock = FakeClock()
    async with scripted(replies) as (url, _), on_clock(url, QUICK, clock) as judge:
        judge.on_wait = lambda seconds, why: waits.append((seconds, why))
        await judge.complete(MESSAGES, None)
    assert waits == []


# -- a throttle lowers the limit; it does not serialise the requests ---------------------------


def _messages(n: int) -> list[list[dict[str, Any]]]:
    rendered = render_response("What is this dish?", "Bibimbap, a Korean rice bowl.")
    return [render_messages(rendered, f"Check number {i}.") for i in range(n)]


async def test_a_throttle_on_every_first_attempt_does_not_serialise_the_requests() -> None:
    """Each request's first attempt gets a 429 with Retry-After: 2. Before, every 429 held
    every request back for its two seconds, so the requests took turns; now the throttled
    request waits alone (its slot given back), the limit is halved once for those seconds,
    and the other requests go on: every first attempt reaches the server before any retry,
    and the retries reach it together."""
    n = 12
    in_flight: list[int] = []  # requests the server holds as each 200 is made

    def policy(request: dict[str, Any], ctx: RequestContext) -> str:
        in_flight.append(sum(r.status is None for r in srv.requests))
        return REPLY

    throttle = FaultRule("http_429", first_k_per_body=1, retry_after_s=2.0)
    fixed = JudgeSettings(
        judge="openai-api/fake/fake-judge",
        concurrency=4,
        adaptive_concurrency=False,
        backoff_base_s=0.01,
        timeout_s=10.0,
    )
    async with (
        FakeOpenAIServer(policy=policy, faults=[throttle], latency_ms=20) as srv,
        OpenAIExecutor(endpoint_for(srv.base_url), fixed) as judge,
    ):
        await asyncio.gather(*(judge.complete(m, None) for m in _messages(n)))
        stats = judge.stats
    statuses = [r.status for r in srv.requests]
    assert statuses == [429] * n + [200] * n  # no retry went before every first attempt
    assert max(in_flight) > 1  # the retries were not sent one at a time
    assert (stats.rate_limited, stats.retries, stats.completed) == (n, n, n)


async def test_a_throttle_halves_the_limit_once_per_retry_after() -> None:
    """Twelve 429s with Retry-After: 2 within the same two seconds halve the limit once."""
    n = 12
    throttle = FaultRule("http_429", first_n=n, retry_after_s=2.0)
    fixed = JudgeSettings(
        judge="openai-api/fake/fake-judge",
        concurrency=8,
        adaptive_concurrency=False,
        backoff_base_s=0.01,
    )
    async with (
        FakeOpenAIServer(faults=[throttle]) as srv,
        OpenAIExecutor(endpoint_for(srv.base_url), fixed) as judge,
    ):
        # the twelve first attempts come back in milliseconds, well within the two
        # seconds the first one's Retry-After asks for
        tasks = [asyncio.ensure_future(judge.complete(m, None)) for m in _messages(n)]
        while judge.stats.rate_limited < n:
            await asyncio.sleep(0.005)
        limit = judge.stats.concurrency_limit
        await asyncio.gather(*tasks)
    assert limit == 4  # 8 -> 4, once


@pytest.mark.usefixtures("quick")
def test_a_pass_goes_on_while_a_throttled_check_waits(small: Workspace, serve: StartServer) -> None:
    """The pass's own window does not count a check waiting out its Retry-After: with a
    429 on each check's first attempt, the four answers' first checks all reach the server
    before any retry (before, the window waited for the throttled check, one at a time)."""
    server = serve(faults=[FaultRule("http_429", first_k_per_body=1, retry_after_s=1.0)])
    report = small.run(settings(concurrency=4))
    assert (report.rows, report.unscored) == (small.n_checks, 0)
    statuses = [r.status for r in server.requests]
    assert statuses[:4] == [429] * 4
    assert Counter(statuses) == {429: small.n_checks, 200: small.n_checks}


def test_a_throttled_probe_passes(serve: StartServer) -> None:
    """A 429 that asks to wait says the endpoint, the model and the key work: the probe
    passes at once (before, the run ended with exit 2 as if the endpoint could not be
    used), and the run meets the throttle with its own retries."""
    server = serve(faults=[FaultRule("http_429", retry_after_s=2.0)])
    [probed] = probe_judges([resolve_judge(settings(probe=True))])
    assert probed.judge == JUDGE
    assert [r.status for r in server.requests] == [429]  # one request, no retry, no wait
