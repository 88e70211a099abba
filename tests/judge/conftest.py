"""Fixtures for the judge tests: a fake judge server in a thread, workspaces, fast backoff."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from judge_helpers import MOKA, PANDA, SMALL_RESPONSES, StartServer, Workspace, quick_executor

import gamut_eval.judge._backend_online as judge_online
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.testing import FakeOpenAIServer, FaultRule

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxies (loopback only) and no fake-provider variables inherited from the shell."""
    for var in (*_PROXY_VARS, "FAKE_API_KEY", "FAKE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture
def serve(judge_env: pytest.MonkeyPatch) -> Iterator[StartServer]:
    """Start a fake judge server in a background thread; ``FAKE_BASE_URL`` points at it."""
    servers: list[FakeOpenAIServer] = []

    def start(
        policy: Any = "keyword",
        faults: tuple[FaultRule, ...] | list[FaultRule] = (),
        latency_ms: float = 0.0,
        api_key: str | None = None,
        reply_tokens: int | None = None,
    ) -> FakeOpenAIServer:
        server = FakeOpenAIServer(
            policy=policy,
            faults=faults,
            latency_ms=latency_ms,
            api_key=api_key,
            reply_tokens=reply_tokens,
        )
        server.start()
        servers.append(server)
        judge_env.setenv("FAKE_BASE_URL", server.base_url)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """``judge_responses`` builds (and closes) fast executors with millisecond backoffs."""

    def quick_client(judge: ResolvedJudge, judge_settings: JudgeSettings | None = None) -> Any:
        return quick_executor(judge_settings or judge.settings)

    monkeypatch.setattr(judge_online, "open_client", quick_client)


@pytest.fixture
def small(tmp_path: Path) -> Workspace:
    """Two questions (3 + 2 fact checks) and four responses: ten checks."""
    return Workspace(tmp_path, [PANDA, MOKA], list(SMALL_RESPONSES))


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[..., Workspace]:
    """Build a workspace from records and response rows, in its own subdirectory."""
    made = 0

    def make(records: list[dict[str, Any]], responses: list[dict[str, Any]]) -> Workspace:
        nonlocal made
        made += 1
        root = tmp_path / f"ws{made}"
        root.mkdir()
        return Workspace(root, records, responses)

    return make
