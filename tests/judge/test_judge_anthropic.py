"""The fast client for Anthropic's Messages API, against the fake Messages server."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from judge_helpers import StartServer, Workspace, settings, verdicts_by_check

from gamut_eval.errors import InputError
from gamut_eval.judge import (
    AnthropicExecutor,
    JudgeAuthError,
    JudgeSettings,
    default_backend,
    render_messages,
    render_response,
    resolve_endpoint,
)
from gamut_eval.judge._backend_online import make_client
from gamut_eval.judge._client_anthropic import completion_from_message
from gamut_eval.testing import FakeAnthropicServer, FaultRule, KeywordPolicy, RequestContext

JUDGE = "anthropic/fake-judge"
KEY = "sk-ant-test"

StartAnthropic = Callable[..., FakeAnthropicServer]


@pytest.fixture
def anthropic(judge_env: pytest.MonkeyPatch) -> Iterator[StartAnthropic]:
    """Start a fake Messages server; ``ANTHROPIC_BASE_URL`` and the key point at it."""
    servers: list[FakeAnthropicServer] = []

    def start(policy: Any = "keyword", faults: tuple[FaultRule, ...] = ()) -> FakeAnthropicServer:
        server = FakeAnthropicServer(policy=policy, faults=faults, api_key=KEY)
        server.start()
        servers.append(server)
        judge_env.setenv("ANTHROPIC_BASE_URL", server.base_url)
        judge_env.setenv("ANTHROPIC_API_KEY", KEY)
        return server

    yield start
    for server in servers:
        server.stop()


class Bodies:
    """A policy that keeps every request body, then answers like ``base``."""

    def __init__(self, base: Any = None) -> None:
        self.base = base or KeywordPolicy().reply
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], ctx: RequestContext) -> str:
        with self._lock:
            self.bodies.append(request)
        return str(self.base(request, ctx))


def anthropic_settings(**overrides: Any) -> JudgeSettings:
    return settings(**{"judge": JUDGE, **overrides})


def quick_client(judge_settings: JudgeSettings) -> AnthropicExecutor:
    quick = judge_settings.model_copy(update={"backoff_base_s": 0.01, "backoff_max_s": 0.05})
    return AnthropicExecutor(resolve_endpoint(judge_settings.judge), quick)


# -- endpoint resolution --------------------------------------------------------------------


def test_anthropic_judges_resolve_to_the_messages_api(judge_env: pytest.MonkeyPatch) -> None:
    judge_env.delenv("ANTHROPIC_BASE_URL", raising=False)
    judge_env.setenv("ANTHROPIC_API_KEY", KEY)
    assert default_backend("anthropic/claude-sonnet-4-5") == "fast"
    endpoint = resolve_endpoint("anthropic/claude-sonnet-4-5")
    assert (endpoint.base_url, endpoint.model_name, endpoint.wire) == (
        "https://api.anthropic.com",
        "claude-sonnet-4-5",
        "anthropic",
    )
    assert (endpoint.api_key, endpoint.api_key_env) == (KEY, "ANTHROPIC_API_KEY")
    judge_env.setenv("ANTHROPIC_BASE_URL", "https://gateway.example/v1/messages/")
    assert resolve_endpoint("anthropic/claude-x").base_url == "https://gateway.example"
    client = make_client(JudgeSettings(judge="anthropic/claude-x"))
    assert isinstance(client, AnthropicExecutor)
    asyncio.run(client.aclose())
    with pytest.raises(InputError, match="Messages API"):
        resolve_endpoint("anthropic/claude-x", openai_only=True)


# -- a whole pass ---------------------------------------------------------------------------


def test_an_anthropic_judge_grades_like_the_openai_path(
    anthropic: StartAnthropic, serve: StartServer, small: Workspace
) -> None:
    anthropic()
    report = small.run(anthropic_settings())
    assert (report.stats.judged, report.stats.unscored) == (small.n_checks, 0)
    via_anthropic = verdicts_by_check(small.rows())
    serve()
    small.run(settings())
    assert verdicts_by_check(small.rows()) == via_anthropic
    assert {status for status, _ in via_anthropic.values()} == {"ok"}


def test_requests_carry_the_shared_prefix_as_a_cache_breakpoint_and_the_check_last(
    anthropic: StartAnthropic, small: Workspace
) -> None:
    bodies = Bodies()
    anthropic(policy=bodies)
    small.run(anthropic_settings())
    assert len(bodies.bodies) == small.n_checks
    prefixes = set()
    for body in bodies.bodies:
        assert "response_format" not in body
        assert (body["model"], body["max_tokens"], body["temperature"]) == ("fake-judge", 400, 0)
        [system] = body["system"]
        assert system["cache_control"] == {"type": "ephemeral"}
        [message] = body["messages"]
        prefix, check = message["content"]
        assert prefix["cache_control"] == {"type": "ephemeral"}
        assert prefix["text"].startswith("# Question\n")
        assert "<<<END RESPONSE " in prefix["text"]
        assert check["text"].startswith("# Check\n")
        assert "cache_control" not in check
        prefixes.add(prefix["text"])
    assert len(prefixes) == len(small.responses)  # one shared prefix per answer


SONNET = "anthropic/claude-sonnet-4-5"
"""A model whose cache minimum is 1,024 tokens."""


@pytest.mark.parametrize(("repeats", "cached"), [(20, False), (120, True)])
def test_checks_after_the_first_read_the_prefix_from_the_cache_from_the_models_minimum(
    anthropic: StartAnthropic, repeats: int, cached: bool
) -> None:
    anthropic()
    answer = "A red panda eating bamboo. " * repeats  # 540 or 3,240 characters
    rendered = render_response("What is it?", answer)
    prefix = len(rendered.system["content"]) + sum(len(p["text"]) for p in rendered.prefix_parts)
    assert (prefix // 4 >= 1024) is cached

    async def main() -> list[Any]:
        async with quick_client(anthropic_settings(judge=SONNET)) as client:
            return [
                await client.complete(render_messages(rendered, check), None)
                for check in ("Names a red panda.", "Mentions bamboo.")
            ]

    first, second = asyncio.run(main())
    assert first.cached_tokens == 0
    assert first.cache_write_tokens == (prefix // 4 if cached else 0)
    assert second.cached_tokens == (prefix // 4 if cached else 0)
    assert second.cache_write_tokens == 0
    assert second.prompt_tokens == first.prompt_tokens
    assert json.loads(second.text)["verdict"] == "meets"


def test_images_are_sent_as_base64_blocks_before_the_check(anthropic: StartAnthropic) -> None:
    bodies = Bodies()
    anthropic(policy=bodies)
    rendered = render_response("What is it?", "A panda.")
    parts = (
        rendered.prefix_parts[0],
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
        *rendered.prefix_parts[1:],
    )
    messages = render_messages(type(rendered)(rendered.system, parts, rendered.nonce), "A check.")

    async def main() -> None:
        async with quick_client(anthropic_settings()) as client:
            await client.complete(messages, None)

    asyncio.run(main())
    blocks = bodies.bodies[0]["messages"][0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
    }
    assert blocks[-2]["cache_control"] == {"type": "ephemeral"}
    assert blocks[-1] == {"type": "text", "text": "# Check\nA check."}


# -- failures -------------------------------------------------------------------------------


def test_a_wrong_key_ends_the_run_naming_anthropic_api_key(
    anthropic: StartAnthropic, small: Workspace, judge_env: pytest.MonkeyPatch
) -> None:
    anthropic()
    judge_env.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    with pytest.raises(JudgeAuthError, match="ANTHROPIC_API_KEY"):
        small.run(anthropic_settings())


@pytest.mark.parametrize("fault", ["http_529", "http_429", "http_500"])
def test_overloaded_rate_limited_and_server_errors_are_retried(
    anthropic: StartAnthropic, small: Workspace, fault: str
) -> None:
    server = anthropic(faults=(FaultRule(fault, first_k_per_body=1, retry_after_s=0),))  # type: ignore[arg-type]
    report = small.run(anthropic_settings(), executor_factory=quick_client)
    assert (report.stats.judged, report.stats.unscored) == (small.n_checks, 0)
    statuses = [r.status for r in server.requests]
    assert statuses.count(200) == small.n_checks
    assert len(statuses) == 2 * small.n_checks


def test_a_refusal_is_unscored_with_the_reason(anthropic: StartAnthropic, small: Workspace) -> None:
    anthropic(faults=(FaultRule("refusal"),))
    report = small.run(anthropic_settings(), executor_factory=quick_client)
    assert report.stats.unscored == small.n_checks
    assert all("refused" in row["reason"] for row in small.rows())


def test_a_reask_sends_the_conversation(anthropic: StartAnthropic, small: Workspace) -> None:
    keyword = KeywordPolicy()

    def first_badly(request: dict[str, Any], ctx: RequestContext) -> str:
        if len(request["messages"]) == 1:
            return ""  # an empty reply: replayed in the re-ask, which the API must accept
        return keyword.reply({**request, "messages": request["messages"][:1]}, ctx)

    bodies = Bodies(first_badly)
    anthropic(policy=bodies)
    report = small.run(anthropic_settings())
    assert (report.stats.judged, report.stats.unscored) == (small.n_checks, 0)
    reasks = [b["messages"] for b in bodies.bodies if len(b["messages"]) > 1]
    assert len(reasks) == small.n_checks
    for messages in reasks:
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[1]["content"] == "(empty reply)"
        assert messages[0]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_usage_counts_cache_reads_and_writes_in_the_prompt() -> None:
    body = {
        "type": "message",
        "content": [{"type": "text", "text": '{"verdict"'}, {"type": "text", "text": ": 1}"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 300,
            "cache_creation_input_tokens": 5,
            "output_tokens": 7,
        },
    }
    completion = completion_from_message(body)
    assert completion is not None
    assert (completion.text, completion.prompt_tokens, completion.cached_tokens) == (
        '{"verdict": 1}',
        315,
        300,
    )
    assert completion.completion_tokens == 7
    assert completion.refusal is None
    assert completion_from_message({"type": "error", "error": {}}) is None


# -- the fake itself ------------------------------------------------------------------------


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_fake_checks_headers_and_required_fields(anthropic: StartAnthropic) -> None:
    server = anthropic()
    url = f"{server.base_url}/v1/messages"
    good = {
        "model": "fake-judge",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
    }
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    assert _post(url, good, headers)[0] == 200
    status, body = _post(url, good, {"anthropic-version": "2023-06-01"})
    assert (status, body["error"]["type"]) == (401, "authentication_error")
    assert _post(url, good, {"x-api-key": KEY})[0] == 400
    for broken in (
        {k: v for k, v in good.items() if k != "max_tokens"},
        {**good, "response_format": {"type": "json_object"}},
        {**good, "messages": []},
        {**good, "messages": [{"role": "assistant", "content": "x"}]},
    ):
        status, body = _post(url, broken, headers)
        assert (status, body["type"], body["error"]["type"]) == (
            400,
            "error",
            "invalid_request_error",
        )


def test_extended_thinking_leaves_room_for_the_verdict() -> None:
    from gamut_eval.judge._client_anthropic import anthropic_body as messages_body

    thinking = {"type": "enabled", "budget_tokens": 2048}
    judge = settings(judge="anthropic/claude-sonnet-4-5", request_args={"thinking": thinking})
    body = messages_body("claude-sonnet-4-5", [{"role": "user", "content": "x"}], judge)
    assert body["max_tokens"] == 2048 + 400
    assert body["thinking"] == thinking
    assert "temperature" not in body
    plain = messages_body("claude-sonnet-4-5", [{"role": "user", "content": "x"}], settings())
    assert plain["max_tokens"] == 400
    assert plain["temperature"] == 0.0
