"""A fake OpenAI-compatible batch API (``/v1/files``, ``/v1/batches``) for the batch tests.

Served on 127.0.0.1 from a background thread, like the package's fake chat server. A batch
moves one status per poll (validating -> in_progress -> finalizing -> completed) and
runs its requests when it completes: each body is answered by a reply policy (the keyword
stand-in judge by default; a re-ask is answered as its first ask would be), unless
``fault(custom_id, body)`` names a fault for it. Everything is logged so tests can assert
what was uploaded, created, polled and downloaded, and how often each custom id was
submitted.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from gamut_eval.testing import KeywordPolicy, RequestContext

Fault = Callable[[str, dict[str, Any]], str | None]
"""(custom_id, request body) -> None, or one of: ``http_400``, ``content_policy``,
``expired`` (an error-file line), ``drop`` (no line at all), ``prose``, ``empty``."""

_STEPS = ("validating", "in_progress", "finalizing", "completed")
_BAD_CONTENT = {"prose": "The answer looks fine to me.", "empty": ""}


def first_ask(body: dict[str, Any]) -> dict[str, Any]:
    """A re-ask's body cut back to its first ask (system + user)."""
    return {**body, "messages": body["messages"][:2]}


def keyword_reply(body: dict[str, Any], index: int = 0) -> str:
    ctx = RequestContext(index, "", 1, str(body.get("model", "")), "")
    return KeywordPolicy().reply(first_ask(body), ctx)


def completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "refusal": None}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def result_line(
    custom_id: str, body: dict[str, Any], fault: str | None, n: int
) -> tuple[str, dict[str, Any]] | None:
    """("output" | "errors", line) for one request, or None when the fault drops it."""
    line: dict[str, Any] = {"id": f"batch_req_{n}", "custom_id": custom_id, "error": None}
    if fault == "drop":
        return None
    if fault == "expired":
        line["response"] = None
        line["error"] = {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window expired.",
        }
        return "errors", line
    if fault in ("http_400", "content_policy"):
        code = "content_policy_violation" if fault == "content_policy" else None
        error = {"message": f"Refused ({fault}).", "type": "invalid_request_error", "code": code}
        line["response"] = {"status_code": 400, "request_id": f"req_{n}", "body": {"error": error}}
        return "errors", line
    content = _BAD_CONTENT[fault] if fault in _BAD_CONTENT else keyword_reply(body, n)
    line["response"] = {
        "status_code": 200,
        "request_id": f"req_{n}",
        "body": completion(body, content),
    }
    return "output", line


def run_requests(
    data: bytes, fault: Fault | None, start: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Execute a request file: the lines of its output and error files."""
    out: dict[str, list[dict[str, Any]]] = {"output": [], "errors": []}
    for n, raw in enumerate(data.splitlines(), start=start):
        request = json.loads(raw)
        assert request["method"] == "POST"
        assert request["url"] == "/v1/chat/completions"
        body = request["body"]
        kind = fault(request["custom_id"], body) if fault else None
        result = result_line(request["custom_id"], body, kind, n)
        if result is not None:
            out[result[0]].append(result[1])
    return out


@dataclass
class FakeBatchAPI:
    """State and handlers of the fake batch API."""

    fault: Fault | None = None
    hold: bool = False
    """While True, batches stay ``in_progress`` (a provider that has not finished yet)."""
    fail_validation: bool = False
    """Batches fail validation (status ``failed`` with an error, no output)."""
    api_key: str | None = None
    """When set, every call must carry ``Authorization: Bearer <api_key>`` (else 401)."""
    flaky: list[int] = field(default_factory=list)
    """Statuses (429, 503...) to answer the next calls with, one per call, before serving."""
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    submitted: Counter[str] = field(default_factory=Counter)
    """custom_id -> number of batches it was submitted in."""
    request_files: list[list[dict[str, Any]]] = field(default_factory=list)
    """The parsed lines of every batch created, in order."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @web.middleware
    async def gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Auth and injected transient failures, before any handler runs."""
        if self.api_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "Incorrect API key."}}, status=401)
        if self.flaky:
            status = self.flaky.pop(0)
            self.calls[f"http_{status}"] += 1
            headers = {"Retry-After": "0"} if status == 429 else None
            error = {"error": {"message": f"transient (fake {status})"}}
            return web.json_response(error, status=status, headers=headers)
        response: web.StreamResponse = await handler(request)
        return response

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024, middlewares=[self.gate])
        app.router.add_post("/v1/files", self.upload)
        app.router.add_get("/v1/files/{id}/content", self.content)
        app.router.add_post("/v1/batches", self.create)
        app.router.add_get("/v1/batches", self.list)
        app.router.add_get("/v1/batches/{id}", self.get)
        return app

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert form["purpose"] == "batch"
        data = upload.file.read() if hasattr(upload, "file") else bytes(str(upload), "utf-8")
        with self.lock:
            self.calls["upload"] += 1
            file_id = f"file-{len(self.files)}"
            self.files[file_id] = data
        return web.json_response(
            {"id": file_id, "object": "file", "bytes": len(data), "purpose": "batch"}
        )

    async def content(self, request: web.Request) -> web.Response:
        self.calls["download"] += 1
        data = self.files.get(request.match_info["id"])
        if data is None:
            return web.json_response({"error": {"message": "No such file"}}, status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        data = self.files.get(body["input_file_id"])
        if data is None:
            return web.json_response({"error": {"message": "No such file"}}, status=400)
        lines = [json.loads(raw) for raw in data.splitlines()]
        with self.lock:
            self.calls["create"] += 1
            self.request_files.append(lines)
            self.submitted.update(line["custom_id"] for line in lines)
            batch_id = f"batch_{len(self.batches)}"
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"],
                "completion_window": body["completion_window"],
                "metadata": body.get("metadata"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "errors": None,
            }
        return web.json_response(self.batches[batch_id])

    async def list(self, request: web.Request) -> web.Response:
        self.calls["list"] += 1
        data = list(reversed(self.batches.values()))
        return web.json_response({"object": "list", "data": data, "has_more": False})

    async def get(self, request: web.Request) -> web.Response:
        self.calls["get"] += 1
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return web.json_response({"error": {"message": "No such batch"}}, status=404)
        self._advance(batch)
        return web.json_response(batch)

    def _advance(self, batch: dict[str, Any]) -> None:
        status = batch["status"]
        if status in ("completed", "failed") or (self.hold and status == "in_progress"):
            return
        if self.fail_validation:
            batch["status"] = "failed"
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "invalid", "message": "Bad file (fake)."}],
            }
            return
        batch["status"] = _STEPS[_STEPS.index(status) + 1]
        if batch["status"] == "completed":
            self._finish(batch)

    def _finish(self, batch: dict[str, Any]) -> None:
        results = run_requests(
            self.files[batch["input_file_id"]], self.fault, start=1000 * len(self.files)
        )
        for kind, field_name in (("output", "output_file_id"), ("errors", "error_file_id")):
            if results[kind]:
                file_id = f"file-{len(self.files)}"
                self.files[file_id] = "".join(json.dumps(x) + "\n" for x in results[kind]).encode()
                batch[field_name] = file_id


class FakeBatchServer:
    """``FakeBatchAPI`` served on 127.0.0.1 from a background thread."""

    def __init__(self, api: FakeBatchAPI) -> None:
        self.api = api
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeBatchServer:
        ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve(ready)), daemon=True)
        self._thread.start()
        assert ready.wait(10), "the fake batch server did not start"
        return self

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner = web.AppRunner(self.api.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
