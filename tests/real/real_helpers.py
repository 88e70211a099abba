"""Names the real-server tests import (a module of its own: ``from conftest import ...``
would pick whichever ``conftest`` was imported first when several test folders run in
one process)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Self

import aiohttp
from aiohttp import web

__all__ = ["JUDGE", "MODEL_ALIAS", "SLOW_SERVER", "CountingProxy", "LlamaServer"]

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


class CountingProxy:
    """A loopback proxy in front of the server that counts the chat requests it holds at
    once: what the server is asked to hold, whatever the client believes it sends.

    ``with CountingProxy(server_url) as proxy``: point the client at ``proxy.url``; after,
    ``proxy.most`` is the largest number of chat requests in flight at one time and
    ``proxy.chats`` how many there were."""

    def __init__(self, target: str) -> None:
        self.target = target.removesuffix("/v1")
        self.url = ""
        self.most = self.chats = self._now = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def _forward(self, request: web.Request) -> web.Response:
        chat = request.path.endswith("/chat/completions")
        if chat:
            self.chats += 1
            self._now += 1
            self.most = max(self.most, self._now)
        try:
            assert self._session is not None
            async with self._session.request(
                request.method,
                self.target + request.path_qs,
                data=await request.read(),
                headers={"Content-Type": request.headers.get("Content-Type", "")},
            ) as reply:
                body = await reply.read()
                return web.Response(status=reply.status, body=body, content_type=reply.content_type)
        finally:
            if chat:
                self._now -= 1

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600))
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/v1"

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def __enter__(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
