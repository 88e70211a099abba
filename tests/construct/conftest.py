"""Fixtures for the construction tests: an offline Inspect environment, images, a corpus copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import inspect_ai.model
import pytest
from construct_helpers import Responder, copy_corpus, make_images

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Inspect logs in the test's folder, no default model, no proxy for loopback servers,
    no search keys from the shell."""
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    for var in (*_PROXY_VARS, "INSPECT_EVAL_MODEL", "TAVILY_API_KEY", "BRAVE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("BRAVE_SEARCH_API_KEY", raising=False)


@pytest.fixture
def responder(monkeypatch: pytest.MonkeyPatch) -> Responder:
    """``mockllm/model`` answers through a Responder (the CLI creates the model itself)."""
    current = Responder()
    real = inspect_ai.model.get_model

    def get_model(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        if model == "mockllm/model":
            kwargs.update(custom_outputs=current, memoize=False)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(inspect_ai.model, "get_model", get_model)
    return current


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    """Two images (a bowl of bibimbap, the Eiffel Tower) and their manifest."""
    return make_images(tmp_path / "images")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A copy of the shipped corpus (tests may edit it)."""
    return copy_corpus(tmp_path)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "build"
