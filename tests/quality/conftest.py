"""Fixtures for the judge-quality tests: a fake judge server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from quality_helpers import StartServer

from gamut_eval.testing import FakeOpenAIServer

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[StartServer]:
    """Start a fake judge server in a background thread; ``FAKE_BASE_URL`` points at it."""
    for var in (*_PROXY_VARS, "FAKE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    servers: list[FakeOpenAIServer] = []

    def start(policy: Any = "keyword") -> FakeOpenAIServer:
        server = FakeOpenAIServer(policy=policy)
        server.start()
        servers.append(server)
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        return server

    yield start
    for server in servers:
        server.stop()
