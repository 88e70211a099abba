"""Names the real-server tests import (a module of its own: ``from conftest import ...``
would pick whichever ``conftest`` was imported first when several test folders run in
one process)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

__all__ = ["JUDGE", "MODEL_ALIAS", "SLOW_SERVER", "LlamaServer"]

MODEL_ALIAS = "smollm2"
JUDGE = f"openai-api/llama/{MODEL_ALIAS}"
"""The model as users name it; the URL comes from LLAMA_BASE_URL."""
SLOW_SERVER = ["--timeout", "300"]
"""A CPU server on a busy 2-core machine can take longer than the probe's default 20 s for
its first reply: as a user with a slow local server would, the tests give a timeout."""

_LOG_LINES = 25
"""Lines of the server's log shown when it dies."""


class LlamaServer:
    """The server process, its URL and its log: a dead server is named, not guessed at."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.process, self.url, self.log = process, url, log

    def death(self) -> str | None:
        """None while the server runs; else how it ended and the last lines of its log."""
        code = self.process.poll()
        if code is None:
            return None
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name} (signal {-code})"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        lines = self.log.read_text(errors="replace").splitlines()[-_LOG_LINES:]
        tail = "\n".join("    " + line for line in lines)
        return f"llama_cpp.server {how}; the last lines of its log ({self.log}):\n{tail}"
