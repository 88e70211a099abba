"""A fake HTTP server that replays recorded API replies, for wire-format tests.

Each route (``POST /v1/chat/completions``, ``POST /v1/messages``, ``POST /search``,
``GET /res/v1/web/search``...) has a script: recorded replies (status and JSON body, as the
provider documents them) answered in order, or a function of the request that returns one.
A script that runs out answers HTTP 599 with a message naming the route, so a test sees an
unexpected extra request instead of hanging. Every request is kept (``requests``) with its
parsed JSON body and query string. Listens on 127.0.0.1 only.

A recorded reply is a JSON object ``{"status": 200, "body": {...}}``; ``load_recording``
reads one from a file. Text in the body may hold ``{{reply}}`` (or be ``{{reply:object}}``):
``fill`` puts there the JSON a test's policy writes for the request, so the envelope stays
as recorded while the content fits the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from gamut_eval.errors import InputError

HOST = "127.0.0.1"
_NO_SCRIPT = 599


@dataclass(frozen=True)
class Recorded:
    """One recorded reply."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplayedRequest:
    """One request as the server received it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


Reply = Recorded | Callable[[ReplayedRequest], Recorded]


def load_recording(path: str | Path) -> Recorded:
    """A recorded reply from a JSON file ``{"status": ..., "body": ..., "headers": {...}}``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Recorded(int(data["status"]), data["body"], dict(data.get("headers", {})))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a recorded reply ({type(exc).__name__}: {exc})") from exc


def fill(recorded: Recorded, reply: Any) -> Recorded:
    """``recorded`` with every ``{{reply}}`` in its strings replaced by ``reply`` (a JSON
    string when it is not one already); a string that is exactly ``{{reply:object}}``
    becomes the reply as a JSON value (Anthropic's tool ``input`` is an object, not text)."""
    text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)

    def walk(node: Any) -> Any:
        if node == "{{reply:object}}":
            return json.loads(text)
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            return node.replace("{{reply}}", text)
        return node

    return Recorded(recorded.status, walk(recorded.body), recorded.headers)


class ReplayServer:
    """Replays ``scripts`` (route -> replies in order, or a function of the request).

    A route is ``"METHOD /path"``. Use ``async with ReplayServer(...) as srv`` inside the
    running loop; ``srv.base_url`` is ``http://127.0.0.1:PORT``.
    """

    def __init__(self, scripts: Mapping[str, Sequence[Reply] | Reply]) -> None:
        self._scripts: dict[str, list[Reply] | Reply] = {
            route: list(script) if isinstance(script, Sequence) else script
            for route, script in scripts.items()
        }
        self.requests: list[ReplayedRequest] = []
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the replay server is not running")
        return f"http://{HOST}:{self._port}"

    def of(self, route: str) -> list[ReplayedRequest]:
        """The requests that came to ``route`` (``"METHOD /path"``)."""
        return [r for r in self.requests if f"{r.method} {r.path}" == route]

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        seen = ReplayedRequest(
            request.method, request.path, dict(request.query), dict(request.headers), body
        )
        self.requests.append(seen)
        route = f"{request.method} {request.path}"
        script = self._scripts.get(route)
        reply: Reply | None
        reply = (script.pop(0) if script else None) if isinstance(script, list) else script
        if reply is None:
            message = f"the replay script of {route} has no reply left (or none was given)"
            return web.json_response({"error": {"message": message}}, status=_NO_SCRIPT)
        recorded = reply if isinstance(reply, Recorded) else reply(seen)
        return web.json_response(recorded.body, status=recorded.status, headers=recorded.headers)

    async def __aenter__(self) -> Self:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, HOST, 0)
        await site.start()
        self._runner = runner
        self._port = runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner, self._runner, self._port = self._runner, None, None
        if runner is not None:
            await runner.cleanup()
