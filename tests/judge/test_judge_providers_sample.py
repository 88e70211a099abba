"""Judges of each provider family grade the whole bundled sample (1,272 checks) with zero
unscored checks, against fakes that answer as those providers do: an OpenAI reasoning
model (its own 400s for max_tokens and temperature), Anthropic's Messages API and Google's
generateContent, each checking its own auth header and required fields."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import JudgeSettings, judge_responses
from gamut_eval.testing import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer

KEY = "the-key"
SAMPLE_CHECKS = 1272


def _openai_reasoning(env: pytest.MonkeyPatch) -> tuple[Any, str]:
    server = FakeOpenAIServer(dialect="openai-reasoning", api_key=KEY, models=("o-mini-fake",))
    server.start()
    env.setenv("FAKE_BASE_URL", server.base_url)
    env.setenv("FAKE_API_KEY", KEY)
    return server, "openai-api/fake/o-mini-fake"


def _anthropic(env: pytest.MonkeyPatch) -> tuple[Any, str]:
    server = FakeAnthropicServer(api_key=KEY)
    server.start()
    env.setenv("ANTHROPIC_BASE_URL", server.base_url)
    env.setenv("ANTHROPIC_API_KEY", KEY)
    return server, "anthropic/claude-sonnet-4-5"


def _gemini(env: pytest.MonkeyPatch) -> tuple[Any, str]:
    server = FakeGeminiServer(api_key=KEY)
    server.start()
    env.setenv("GOOGLE_BASE_URL", server.base_url)
    env.setenv("GOOGLE_API_KEY", KEY)
    return server, "google/gemini-2.5-flash"


@pytest.mark.parametrize("start", [_openai_reasoning, _anthropic, _gemini])
def test_a_provider_judge_grades_the_sample_with_no_unscored_check(
    start: Callable[[pytest.MonkeyPatch], tuple[Any, str]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    server, judge = start(monkeypatch)
    try:
        settings = JudgeSettings(judge=judge, concurrency=16, timeout_s=10.0)
        report = judge_responses(
            load_dataset(sample_dir() / "dataset.jsonl"),
            sample_dir() / "responses.jsonl",
            settings,
            tmp_path / "store.sqlite",
            tmp_path / "verdicts.jsonl",
        )
    finally:
        server.stop()
    assert report.rows == SAMPLE_CHECKS
    assert report.unscored == 0
    statuses = [r.status for r in server.requests]
    assert statuses.count(200) >= SAMPLE_CHECKS  # every check answered (and the probe)
    assert sum(s not in (200, None) for s in statuses) <= 2  # at most the probe's corrections
