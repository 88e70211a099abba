"""Fixtures for the scale-out tests: the fake batch API, the fake chat server, workspaces.

The judge tests' builders (datasets, responses, workspaces, verdict tables) are reused
from ``tests/judge/judge_helpers.py``, so "the same verdicts as the fast executor" is
checked against the very table the judge tests check the fast executor against.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))

from fake_batch import FakeBatchAPI, FakeBatchServer
from judge_helpers import MOKA, PANDA, SMALL_RESPONSES, Workspace

from gamut_eval.testing import FakeOpenAIServer

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
def scale_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Loopback only: no proxies, no fake-provider variables inherited from the shell."""
    for var in (*_PROXY_VARS, "FAKE_API_KEY", "FAKE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture
def batch_api(scale_env: pytest.MonkeyPatch) -> Iterator[FakeBatchAPI]:
    """A fake batch API on 127.0.0.1; ``FAKE_BASE_URL`` points at it."""
    api = FakeBatchAPI()
    server = FakeBatchServer(api).start()
    scale_env.setenv("FAKE_BASE_URL", server.base_url)
    yield api
    server.stop()


@pytest.fixture
def chat_server(scale_env: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeOpenAIServer]]:
    """Start the package's fake chat server; ``FAKE_BASE_URL`` points at the last one."""
    servers: list[FakeOpenAIServer] = []

    def start(**kwargs: Any) -> FakeOpenAIServer:
        server = FakeOpenAIServer(**kwargs)
        server.start()
        servers.append(server)
        scale_env.setenv("FAKE_BASE_URL", server.base_url)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def small(tmp_path: Path) -> Workspace:
    """Two questions (3 + 2 fact checks) and four responses: ten checks."""
    return Workspace(tmp_path, [PANDA, MOKA], list(SMALL_RESPONSES))
