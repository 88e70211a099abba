"""The fast client for Google's Gemini generateContent, against the fake Gemini server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from judge_helpers import StartServer, Workspace, settings, verdicts_by_check

from gamut_eval.errors import InputError
from gamut_eval.judge import (
    GeminiExecutor,
    JudgeAuthError,
    JudgeSettings,
    default_backend,
    resolve_endpoint,
)
from gamut_eval.judge._backend_online import make_client
from gamut_eval.judge._client_gemini import completion_from_gemini
from gamut_eval.testing import FakeGeminiServer, FaultRule, KeywordPolicy, RequestContext

JUDGE = "google/gemini-2.5-flash"
KEY = "AIza-test"

StartGemini = Callable[..., FakeGeminiServer]


@pytest.fixture
def gemini(judge_env: pytest.MonkeyPatch) -> Iterator[StartGemini]:
    """Start a fake Gemini server; ``GOOGLE_BASE_URL`` and the key point at it."""
    servers: list[FakeGeminiServer] = []

    def start(policy: Any = "keyword", faults: tuple[FaultRule, ...] = ()) -> FakeGeminiServer:
        server = FakeGeminiServer(policy=policy, faults=faults, api_key=KEY)
        server.start()
        servers.append(server)
        judge_env.setenv("GOOGLE_BASE_URL", server.base_url)
        judge_env.setenv("GOOGLE_API_KEY", KEY)
        return server

    yield start
    for server in servers:
        server.stop()


class Bodies:
    """A policy that keeps every request body, then answers like the keyword judge."""

    def __init__(self) -> None:
        self.base = KeywordPolicy().reply
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], ctx: RequestContext) -> str:
        with self._lock:
            self.bodies.append(request)
        return str(self.base(request, ctx))


def gemini_settings(**overrides: Any) -> JudgeSettings:
    return settings(judge=JUDGE, **overrides)


def quick_client(judge_settings: JudgeSettings) -> GeminiExecutor:
    quick = judge_settings.model_copy(update={"backoff_base_s": 0.01, "backoff_max_s": 0.05})
    return GeminiExecutor(resolve_endpoint(judge_settings.judge), quick)


def test_google_judges_resolve_to_generate_content(judge_env: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        judge_env.delenv(name, raising=False)
    assert default_backend("google/gemini-2.5-pro") == "fast"
    judge_env.setenv("GEMINI_API_KEY", "from-gemini")
    endpoint = resolve_endpoint("google/gemini-2.5-pro")
    assert (endpoint.base_url, endpoint.model_name, endpoint.wire) == (
        "https://generativelanguage.googleapis.com/v1beta",
        "gemini-2.5-pro",
        "gemini",
    )
    assert (endpoint.api_key, endpoint.api_key_env) == ("from-gemini", "GEMINI_API_KEY")
    judge_env.setenv("GOOGLE_API_KEY", KEY)
    assert resolve_endpoint("google/g").api_key_env == "GOOGLE_API_KEY"
    judge_env.setenv("GOOGLE_BASE_URL", "https://gw.example/v1beta/models/x:generateContent")
    assert resolve_endpoint("google/g").base_url == "https://gw.example/v1beta"
    client = make_client(JudgeSettings(judge="google/gemini-2.5-flash"))
    assert isinstance(client, GeminiExecutor)
    asyncio.run(client.aclose())
    with pytest.raises(InputError, match="generateContent"):
        resolve_endpoint("google/gemini-2.5-flash", openai_only=True)


def test_a_google_judge_grades_like_the_openai_path(
    gemini: StartGemini, serve: StartServer, small: Workspace
) -> None:
    gemini()
    report = small.run(gemini_settings())
    assert (report.stats.judged, report.stats.unscored) == (small.n_checks, 0)
    via_gemini = verdicts_by_check(small.rows())
    serve()
    small.run(settings())
    assert verdicts_by_check(small.rows()) == via_gemini


def test_the_body_carries_the_schema_and_a_thinking_budget(
    gemini: StartGemini, small: Workspace
) -> None:
    bodies = Bodies()
    gemini(policy=bodies)
    small.run(gemini_settings())
    assert len(bodies.bodies) == small.n_checks
    for body in bodies.bodies:
        config = body["generationConfig"]
        assert config["maxOutputTokens"] == 4096
        assert config["thinkingConfig"] == {"thinkingBudget": 1024}
        assert config["responseMimeType"] == "application/json"
        schema = config["responseSchema"]
        assert "additionalProperties" not in schema
        assert schema["required"] == ["explanation", "verdict"]
        [system] = body["systemInstruction"]["parts"]
        assert system["text"]
        [turn] = body["contents"]
        prefix, check = turn["parts"]
        assert turn["role"] == "user"
        assert prefix["text"].startswith("# Question\n")
        assert check["text"].startswith("# Check\n")


def test_a_non_thinking_model_keeps_its_token_budget(gemini: StartGemini, small: Workspace) -> None:
    bodies = Bodies()
    gemini(policy=bodies)
    small.run(settings(judge="google/gemini-2.0-flash"))
    config = bodies.bodies[0]["generationConfig"]
    assert config["maxOutputTokens"] == 400
    assert "thinkingConfig" not in config


def test_a_wrong_key_ends_the_run_naming_the_key_variable(
    gemini: StartGemini, small: Workspace, judge_env: pytest.MonkeyPatch
) -> None:
    gemini()
    judge_env.setenv("GOOGLE_API_KEY", "AIza-wrong")
    with pytest.raises(JudgeAuthError, match="GOOGLE_API_KEY"):
        small.run(gemini_settings())


@pytest.mark.parametrize("fault", ["http_429", "http_503", "http_500"])
def test_rate_limits_and_server_errors_are_retried(
    gemini: StartGemini, small: Workspace, fault: str
) -> None:
    server = gemini(faults=(FaultRule(fault, first_k_per_body=1, retry_after_s=0),))  # type: ignore[arg-type]
    report = small.run(gemini_settings(), executor_factory=quick_client)
    assert (report.stats.judged, report.stats.unscored) == (small.n_checks, 0)
    statuses = [r.status for r in server.requests]
    assert statuses.count(200) == small.n_checks
    assert len(statuses) == 2 * small.n_checks


def test_a_safety_finish_is_a_content_policy_unscored_row(
    gemini: StartGemini, small: Workspace
) -> None:
    gemini(faults=(FaultRule("content_policy"),))
    report = small.run(gemini_settings(), executor_factory=quick_client)
    assert report.stats.unscored == small.n_checks
    assert all(row["reason"].startswith("content policy") for row in small.rows())
    assert all("SAFETY" in row["reason"] for row in small.rows())


def test_replies_skip_thoughts_and_read_usage() -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "thinking...", "thought": True}, {"text": '{"v": 1}'}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 300,
            "cachedContentTokenCount": 200,
            "candidatesTokenCount": 7,
        },
    }
    completion = completion_from_gemini(body)
    assert not isinstance(completion, str)
    assert completion is not None
    assert (completion.text, completion.prompt_tokens, completion.cached_tokens) == (
        '{"v": 1}',
        300,
        200,
    )
    assert completion.completion_tokens == 7
    blocked = completion_from_gemini({"promptFeedback": {"blockReason": "OTHER"}})
    assert isinstance(blocked, str)
    assert blocked.startswith("content policy")
    cut = completion_from_gemini({"candidates": [{"finishReason": "MAX_TOKENS"}]})
    assert not isinstance(cut, str)
    assert cut is not None
    assert cut.text == ""
    assert completion_from_gemini({"error": {}}) is None
