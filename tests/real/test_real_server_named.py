"""A real server that dies is named in the failure: its signal and its log's last lines
(the client alone would only say the server disconnected)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from real_helpers import LlamaServer

CRASH = (
    "import os, signal; print('llama_model_loader: loaded'); os.kill(os.getpid(), signal.SIGSEGV)"
)


def start(tmp_path: Path, code: str) -> LlamaServer:
    log = tmp_path / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=output, stderr=output)
    return LlamaServer(process, "http://127.0.0.1:1/v1", log)


def test_a_crashed_server_is_named_with_its_signal_and_log(tmp_path: Path) -> None:
    server = start(tmp_path, CRASH)
    server.process.wait(timeout=30)
    death = server.death()
    assert death is not None
    assert "killed by SIGSEGV (signal 11)" in death
    assert "llama_model_loader: loaded" in death
    assert str(server.log) in death


def test_a_server_that_exits_is_named_with_its_status(tmp_path: Path) -> None:
    server = start(tmp_path, "import sys; print('bad flag'); sys.exit(3)")
    server.process.wait(timeout=30)
    death = server.death()
    assert death is not None
    assert "exited with status 3" in death
    assert "bad flag" in death


def test_a_running_server_is_not_dead(tmp_path: Path) -> None:
    server = start(tmp_path, "import time; time.sleep(30)")
    try:
        assert server.death() is None
    finally:
        server.process.kill()
        server.process.wait()
