"""The fast judge executor against loopback servers: replies, retries, limits, refusals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from email.utils import formatdate
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from judge_helpers import FakeClock
from yarl import URL

from gamut_eval.judge._client import (
    ChatMessage,
    JudgeAuthError,
    JudgeRequestRejected,
    JudgeUnavailable,
)
from gamut_eval.judge._client_http import (
    TokenBucket as _TokenBucket,
    env_proxy as _env_proxy,
)
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._concurrency import AdaptiveLimit as _AdaptiveLimit
from gamut_eval.judge._prompt import (
    RESPONSE_FORMAT,
    JudgeImage,
    render_messages,
    render_response,
)
from gamut_eval.judge._resolve import Endpoint, resolve_endpoint
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.testing import (
    FakeOpenAIServer,
    FaultRule,
    RequestContext,
    ScriptedPolicy,
    verdict_json,
)


def fast_settings(**values: Any) -> JudgeSettings:
    """Judge settings that only the fast client reads (the judge name is not sent)."""
    return JudgeSettings(judge="openai-api/fake/fake-judge", **values)


# Small backoff so retry tests take milliseconds; Retry-After is honoured regardless.
QUICK = fast_settings(concurrency=8, backoff_base_s=0.01, backoff_max_s=0.05, timeout_s=5.0)
MESSAGES: list[ChatMessage] = render_messages(
    render_response("What is this dish?", "Bibimbap, a Korean rice bowl."),
    "Identifies the dish as bibimbap.",
)
REPLY = verdict_json("meets", "names bibimbap")


def endpoint_for(base_url: str, api_key: str | None = "sk-test") -> Endpoint:
    return resolve_endpoint("openai/fake-judge", base_url=base_url, api_key=api_key)


def capture(seen: list[dict[str, Any]], reply: str = REPLY) -> Callable[..., str]:
    """A fake-server policy that records each request body it answers."""

    def policy(request: dict[str, Any], ctx: RequestContext) -> str:
        seen.append(request)
        return reply

    return policy


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(policy=ScriptedPolicy([REPLY], when_exhausted="cycle")) as srv:
        yield srv


@pytest.fixture
async def judge(server: FakeOpenAIServer) -> AsyncIterator[OpenAIExecutor]:
    async with OpenAIExecutor(endpoint_for(server.base_url), QUICK) as executor:
        yield executor


def statuses(server: FakeOpenAIServer) -> list[int | None]:
    return [r.status for r in server.requests]


def on_clock(base_url: str, settings: JudgeSettings, clock: FakeClock) -> OpenAIExecutor:
    return OpenAIExecutor(endpoint_for(base_url), settings, clock=clock, sleep=clock.sleep)


# -- a scripted loopback server for replies the fake server does not make -------------------

Reply = tuple[int, Any] | tuple[int, Any, dict[str, str]]
"""(status, JSON payload, bytes, or None for a normal completion; optional headers)."""


class _Scripted:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.log: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.log.append(
            {
                "at": time.time(),
                "body": await request.json(),
                "content_type": request.content_type,
                "authorization": request.headers.get("Authorization"),
            }
        )
        status, payload, *rest = self.replies.pop(0)
        if payload is None:
            payload = {"choices": [{"message": {"content": REPLY}, "finish_reason": "stop"}]}
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = rest[0] if rest else {}
        return web.Response(status=status, body=body, headers=headers)


@contextlib.asynccontextmanager
async def scripted(replies: list[Reply]) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback server that sends ``replies`` in order; yields its base URL and its log."""
    script = _Scripted(replies)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", script.handle)
    async with TestServer(app, host="127.0.0.1") as server:
        yield str(server.make_url("/v1")), script.log


# -- replies ----------------------------------------------------------------------------


async def test_a_reply_becomes_a_completion_with_usage() -> None:
    seen: list[dict[str, Any]] = []
    async with (
        FakeOpenAIServer(policy=capture(seen), api_key="sk-test") as srv,
        OpenAIExecutor(endpoint_for(srv.base_url), QUICK) as judge,
    ):
        completion = await judge.complete(MESSAGES, RESPONSE_FORMAT)
    assert completion.text == REPLY
    assert completion.prompt_tokens > 0
    assert completion.completion_tokens == len(REPLY) // 4
    assert completion.cached_tokens == 0
    assert completion.transport_attempts == 1
    assert completion.refusal is None
    assert completion.latency_s > 0
    assert judge.judge_id == "openai/fake-judge"
    body = seen[0]
    assert body == {
        "model": "fake-judge",
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 400,
        "response_format": RESPONSE_FORMAT,
    }
    stats = judge.stats
    assert (stats.requests_sent, stats.retries, stats.completed, stats.in_flight) == (1, 0, 1, 0)


async def test_response_format_is_left_out_without_structured_output() -> None:
    seen: list[dict[str, Any]] = []
    config = fast_settings(structured_output=False, temperature=0.3, max_tokens=50)
    async with (
        FakeOpenAIServer(policy=capture(seen)) as srv,
        OpenAIExecutor(endpoint_for(srv.base_url, api_key=None), config) as judge,
    ):
        await judge.complete(MESSAGES, RESPONSE_FORMAT)
        await judge.complete(MESSAGES, None)
    assert all("response_format" not in body for body in seen)
    assert (seen[0]["temperature"], seen[0]["max_tokens"]) == (0.3, 50)


async def test_image_parts_pass_through_unchanged() -> None:
    image = JudgeImage("data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==", "abc")
    messages = render_messages(render_response("What is it?", "A cat.", image), "Says cat.")
    assert isinstance(messages[1]["content"], list)
    seen: list[dict[str, Any]] = []
    async with (
        FakeOpenAIServer(policy=capture(seen)) as srv,
        OpenAIExecutor(endpoint_for(srv.base_url), QUICK) as judge,
    ):
        await judge.complete(messages, None)
    assert seen[0]["messages"] == messages


async def test_refusal_and_cached_tokens_are_read_from_the_reply() -> None:
    reply = {
        "choices": [
            {"message": {"content": None, "refusal": "no"}, "finish_reason": "stop"},
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 64},
        },
    }
    async with scripted([(200, reply)]) as (url, log), OpenAIExecutor(endpoint_for(url)) as judge:
        completion = await judge.complete(MESSAGES, None)
    assert (completion.text, completion.refusal) == ("", "no")
    assert (completion.prompt_tokens, completion.cached_tokens) == (100, 64)
    assert log[0]["content_type"] == "application/json"
    assert log[0]["authorization"] == "Bearer sk-test"


# -- transient failures -------------------------------------------------------------------


async def test_429_waits_for_retry_after_then_one_success(server: FakeOpenAIServer) -> None:
    server.set_faults([FaultRule("http_429", first_n=1, retry_after_s=1.0)])
    clock = FakeClock()
    async with on_clock(server.base_url, QUICK, clock) as judge:
        completion = await judge.complete(MESSAGES, None)
    # The retry goes one Retry-After later, plus at most one backoff step of jitter.
    assert 1.0 <= clock.elapsed <= 1.0 + QUICK.backoff_base_s
    assert statuses(server) == [429, 200]
    assert completion.transport_attempts == 2
    assert (judge.stats.rate_limited, judge.stats.retries) == (1, 1)


async def test_retry_after_as_an_http_date_is_honoured() -> None:
    when = formatdate(time.time() + 60, usegmt=True)  # whole seconds: 59-60 s from now
    replies: list[Reply] = [
        (429, {"error": {"message": "slow"}}, {"Retry-After": when}),
        (200, None),
    ]
    clock = FakeClock()
    async with scripted(replies) as (url, log), on_clock(url, QUICK, clock) as judge:
        await judge.complete(MESSAGES, None)
    assert len(log) == 2
    # Read as about a minute away (less however long the test took to get the reply).
    assert 50 <= clock.elapsed <= 60 + QUICK.backoff_base_s


async def test_429s_lower_the_concurrency_limit(server: FakeOpenAIServer) -> None:
    server.set_faults([FaultRule("http_429", first_n=3, retry_after_s=0)])
    fixed = QUICK.model_copy(update={"adaptive_concurrency": False})  # AIMD alone
    judge = OpenAIExecutor(endpoint_for(server.base_url), fixed)
    await judge.complete(MESSAGES, None)
    # 8 -> 4 -> 2 -> 1 on three 429s, then +1 for the first success (a window of one).
    assert judge.stats.concurrency_limit == 2
    assert judge.stats.rate_limited == 3
    for _ in range(2 + 3 + 4 + 5 + 6 + 7):  # one window of successes per step back up
        await judge.complete(MESSAGES, None)
    assert judge.stats.concurrency_limit == 8
    await judge.aclose()


def test_a_burst_of_429s_halves_the_limit_once() -> None:
    limit = _AdaptiveLimit(8, start=8)
    epoch = limit.epoch  # all eight were sent before any 429 came back
    for _ in range(8):
        limit.on_throttle(epoch)
    assert limit.limit == 4
    limit.on_throttle(limit.epoch)  # a request sent after the decrease
    assert limit.limit == 2


async def test_in_flight_calls_never_exceed_the_limit() -> None:
    in_flight: list[int] = []  # requests the server holds, seen as each one is answered

    def policy(request: dict[str, Any], ctx: RequestContext) -> str:
        in_flight.append(sum(r.status is None for r in srv.requests))
        return REPLY

    # Each reply waits 100 ms, so calls the limit let through together overlap at the server.
    async with (
        FakeOpenAIServer(policy=policy, latency_ms=100) as srv,
        OpenAIExecutor(endpoint_for(srv.base_url), fast_settings(concurrency=2)) as judge,
    ):
        await asyncio.gather(*(judge.complete(MESSAGES, None) for _ in range(6)))
    assert len(in_flight) == 6
    assert max(in_flight) <= 2


@pytest.mark.parametrize("kind", ["http_500", "http_503"])
async def test_5xx_then_success(server: FakeOpenAIServer, judge: OpenAIExecutor, kind: Any) -> None:
    server.set_faults([FaultRule(kind, first_n=1)])
    completion = await judge.complete(MESSAGES, None)
    assert completion.transport_attempts == 2
    assert statuses(server)[1] == 200
    assert (judge.stats.retries, judge.stats.rate_limited) == (1, 0)


async def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    # The first reply stalls for a minute; the 0.2 s timeout gives up on it long before.
    server.set_faults([FaultRule("timeout", first_n=1, timeout_s=60)])
    config = fast_settings(timeout_s=0.2, backoff_base_s=0.01)
    async with OpenAIExecutor(endpoint_for(server.base_url), config) as judge:
        started = time.monotonic()
        completion = await judge.complete(MESSAGES, None)
    assert 0.2 <= time.monotonic() - started < 20
    assert completion.transport_attempts == 2
    assert len(server.requests) == 2


async def test_reset_mid_body_is_retried_and_the_partial_body_never_returned() -> None:
    partial, full = verdict_json("meets", "PARTIAL"), verdict_json("missing", "FULL")
    async with (
        FakeOpenAIServer(policy=ScriptedPolicy([partial, full])) as srv,
        OpenAIExecutor(endpoint_for(srv.base_url), QUICK) as judge,
    ):
        srv.set_faults([FaultRule("reset_mid_body", first_n=1)])
        completion = await judge.complete(MESSAGES, None)
    assert completion.text == full
    assert completion.transport_attempts == 2


async def test_a_200_that_is_not_a_completion_is_retried() -> None:
    replies: list[Reply] = [(200, b'{"choices": [{"mess'), (200, {"error": "busy"}), (200, None)]
    async with scripted(replies) as (url, _), OpenAIExecutor(endpoint_for(url), QUICK) as judge:
        completion = await judge.complete(MESSAGES, None)
    assert completion.text == REPLY
    assert completion.transport_attempts == 3


async def test_exhausted_retries_raise_judge_unavailable(server: FakeOpenAIServer) -> None:
    server.set_faults([FaultRule("http_503")])
    config = fast_settings(max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02)
    async with OpenAIExecutor(endpoint_for(server.base_url), config) as judge:
        with pytest.raises(JudgeUnavailable, match="HTTP 503") as caught:
            await judge.complete(MESSAGES, None)
    assert caught.value.attempts == 3
    assert statuses(server) == [503, 503, 503]
    assert (judge.stats.failed, judge.stats.retries) == (1, 2)


async def test_an_unreachable_endpoint_is_unavailable_not_a_crash() -> None:
    async with TestServer(web.Application(), host="127.0.0.1") as idle:
        url = str(idle.make_url("/v1"))
    config = fast_settings(max_retries=1, backoff_base_s=0.01)
    async with OpenAIExecutor(endpoint_for(url), config) as judge:
        with pytest.raises(JudgeUnavailable) as caught:
            await judge.complete(MESSAGES, None)
    assert caught.value.attempts == 2


# -- refusals and credentials ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("http_400", "HTTP 400: Invalid request (fake)."),
        ("content_policy", "content policy: Your request was rejected"),
    ],
)
async def test_rejected_requests_are_not_retried(
    server: FakeOpenAIServer, judge: OpenAIExecutor, kind: Any, reason: str
) -> None:
    server.set_faults([FaultRule(kind)])
    with pytest.raises(JudgeRequestRejected) as caught:
        await judge.complete(MESSAGES, None)
    assert caught.value.reason.startswith(reason)
    assert caught.value.attempts == 1
    assert len(server.requests) == 1


async def test_a_filtered_reply_is_a_content_policy_rejection() -> None:
    reply = {"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]}
    async with scripted([(200, reply)]) as (url, log), OpenAIExecutor(endpoint_for(url)) as judge:
        with pytest.raises(JudgeRequestRejected, match=r"^content policy: "):
            await judge.complete(MESSAGES, None)
    assert len(log) == 1


async def test_401_names_the_variable_to_set_after_one_request() -> None:
    async with (
        FakeOpenAIServer(api_key="sk-right") as srv,
        OpenAIExecutor(endpoint_for(srv.base_url, api_key="sk-wrong-secret"), QUICK) as judge,
    ):
        with pytest.raises(JudgeAuthError) as caught:
            await judge.complete(MESSAGES, None)
    message = str(caught.value)
    assert "rejected the API key (HTTP 401); set OPENAI_API_KEY" in message
    assert "sk-wrong-secret" not in message
    assert statuses(srv) == [401]


async def test_quota_exhaustion_is_not_retried() -> None:
    error = {"error": {"message": "check your plan", "code": "insufficient_quota"}}
    async with scripted([(429, error)]) as (url, log), OpenAIExecutor(endpoint_for(url)) as judge:
        with pytest.raises(JudgeUnavailable, match="quota exhausted"):
            await judge.complete(MESSAGES, None)
    assert len(log) == 1


# -- client-side rate limits ------------------------------------------------------------------


async def test_rpm_limit_spaces_requests(server: FakeOpenAIServer) -> None:
    # 600/min = 10/s with a one-second burst: 10 go at once, the next 5 at 0.1 s intervals.
    clock = FakeClock()
    async with on_clock(server.base_url, fast_settings(rpm=600), clock) as judge:
        await asyncio.gather(*(judge.complete(MESSAGES, None) for _ in range(15)))
    assert len(server.requests) == 15
    assert sorted(clock.wakes) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


async def test_tpm_limit_spaces_requests(server: FakeOpenAIServer) -> None:
    messages: list[ChatMessage] = [{"role": "user", "content": "x" * 400}]  # 100 + 400 tokens
    config = fast_settings(tpm=60_000, max_tokens=400)  # 1000 tokens/s: two at once, then 0.5 s
    clock = FakeClock()
    async with on_clock(server.base_url, config, clock) as judge:
        await asyncio.gather(*(judge.complete(messages, None) for _ in range(4)))
    assert len(server.requests) == 4
    assert sorted(clock.wakes) == pytest.approx([0.5, 1.0])


def test_a_token_bucket_books_in_order() -> None:
    clock = FakeClock()
    bucket = _TokenBucket(60, clock)  # one per second, burst of one
    assert bucket.reserve(1) == 0
    assert bucket.reserve(1) == pytest.approx(1)
    assert bucket.reserve(1) == pytest.approx(2)
    clock.now += 1.5  # booked until 2 s from the start: the next one goes at 3 s
    assert bucket.reserve(1) == pytest.approx(1.5)


def test_proxy_settings_are_read_once_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    url = URL("https://api.openai.com/v1/chat/completions")
    assert _env_proxy(url) == (None, None)
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.local:3128")
    auth = {"Proxy-Authorization": "Basic dXNlcjpwdw=="}  # base64 of "user:pw"
    assert _env_proxy(url) == (URL("http://proxy.local:3128"), auth)
    monkeypatch.setenv("NO_PROXY", "api.openai.com")
    assert _env_proxy(url) == (None, None)
