"""A deterministic fake OpenAI-compatible chat-completions server for tests and benchmarks.

It listens on 127.0.0.1 only (a random free port by default), speaks enough of the chat
completions format for the ``openai`` SDK and Inspect AI's ``openai-api`` provider, logs
every request by a hash of its canonical body, and injects the judge-output faults of
docs/reliability.md section B on demand. Run it in a background thread (``with``), inside a
running loop (``async with``), or as a separate process (``fake_openai`` module CLI).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from gamut_eval.errors import InputError
from gamut_eval.testing._faults import (
    CONTENT_FAULTS,
    HTTP_FAULTS,
    FaultRule,
    first_matching_rule,
    parse_fault_rules,
    serialise_fault_rules,
)
from gamut_eval.testing._policies import (
    FakeServerError,
    Policy,
    as_policy_function,
    parse_judge_prompt,
    verdict_json,
)
from gamut_eval.testing._prompt_cache import PromptCache
from gamut_eval.testing._requests import (
    RequestContext,
    RequestLog,
    RequestRecord,
    last_user_message,
)
from gamut_eval.testing._wire import (
    BAD_API_KEY,
    DIALECTS,
    completion_body,
    error_response,
    estimate_prompt_tokens,
    json_response,
    parse_body,
    policy_error_response,
    request_problem,
    reset_mid_body,
    seconds_header,
    unknown_model,
    verdict_of,
)

__all__ = ["DEFAULT_MODELS", "HOST", "FakeOpenAIServer"]

HOST = "127.0.0.1"
"""The only interface the fake listens on: it must never be reachable from the network."""
DEFAULT_MODELS: tuple[str, ...] = ("fake-judge",)

_MAX_BODY_BYTES = 64 * 1024 * 1024  # judge prompts may carry base64 images
_BACKLOG = 1024  # benchmarks open many keep-alive connections at once
_SHUTDOWN_GRACE_S = 1.0  # bounded so a stalled "timeout" fault never delays stop()
_START_TIMEOUT_S = 30.0


class FakeOpenAIServer:
    """Fake ``/v1/chat/completions`` and ``/v1/models`` on 127.0.0.1.

    Use ``with FakeOpenAIServer() as srv`` (background thread with its own event loop) or
    ``async with FakeOpenAIServer() as srv`` (inside the running loop); then point a client
    at ``srv.base_url``. ``srv.requests`` is the request log, ``srv.set_faults`` changes
    the injected faults while it runs. ``sleep`` is what the fake waits with (the reply
    latency, a ``timeout`` fault's stall); tests pass their own to hold replies at will.
    """

    def __init__(
        self,
        *,
        policy: Policy | str = "keyword",
        faults: Iterable[FaultRule] = (),
        latency_ms: float = 0.0,
        models: Sequence[str] = DEFAULT_MODELS,
        api_key: str | None = None,
        port: int = 0,
        dialect: str = "openai",
        known_models_only: bool = False,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if latency_ms < 0:
            raise ValueError(f"latency_ms must be >= 0; got {latency_ms}")
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
        self._dialect = dialect
        self._known_models_only = known_models_only
        self._policy = as_policy_function(policy)
        self._faults: tuple[FaultRule, ...] = tuple(faults)
        self._latency_s = latency_ms / 1000
        self._sleep = sleep
        self._models = tuple(models)
        self._api_key = api_key
        self._expected_auth = None if api_key is None else f"Bearer {api_key}"
        self._prompt_cache = PromptCache()  # what the Anthropic and Gemini fakes cache
        self._requested_port = port
        self._log = RequestLog()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread_stop: asyncio.Event | None = None
        self._thread_error: BaseException | None = None

    # -- addresses ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port (only once started)."""
        if self._port is None:
            raise FakeServerError("the fake server is not running; start it first")
        return self._port

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (what the CLI prints after ``READY``)."""
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the ``base_url`` for an OpenAI client."""
        return f"{self.root_url}/v1"

    # -- request log and faults (thread-safe) -----------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of the request log, in arrival order."""
        return self._log.records()

    def count_by_body_hash(self) -> dict[str, int]:
        """How many times each canonical body hash arrived since start or reset."""
        return self._log.count_by_body_hash()

    def reset(self) -> None:
        """Clear the request log; arrival indexes and per-body counts restart."""
        self._log.reset()

    @property
    def faults(self) -> tuple[FaultRule, ...]:
        """The fault rules in force, first match wins."""
        return self._faults

    def set_faults(self, rules: Iterable[FaultRule]) -> None:
        """Replace the fault rules; safe from any thread (one atomic attribute swap)."""
        self._faults = tuple(rules)

    # -- HTTP handlers -----------------------------------------------------------------

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._list_models)
        self._add_control_routes(app)
        return app

    def _add_control_routes(self, app: web.Application) -> None:
        """The test-control endpoints every fake shares (request log, reset, faults)."""
        app.router.add_get("/_fake/requests", self._get_requests)
        app.router.add_post("/_fake/reset", self._post_reset)
        app.router.add_get("/_fake/faults", self._get_faults)
        app.router.add_post("/_fake/faults", self._post_faults)

    def _authorised(self, request: web.Request) -> bool:
        expected = self._expected_auth
        return expected is None or request.headers.get("Authorization") == expected

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        payload, digest = parse_body(await request.read())
        model = payload.get("model") if isinstance(payload, dict) else None
        model = sys.intern(model) if isinstance(model, str) else ""  # one copy per name in the log
        user_text = last_user_message(payload) if isinstance(payload, dict) else ""
        return await self._logged(
            digest, model, user_text, lambda ctx, rule: self._reply(request, payload, ctx, rule)
        )

    async def _logged(
        self,
        digest: str,
        model: str,
        user_text: str,
        answer: Callable[[RequestContext, FaultRule | None], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        """Log a request's arrival, pick its fault rule, ``answer`` it, log its status."""
        generation, index, seen = self._log.arrive(digest, model)
        ctx = RequestContext(index, digest, seen, model, user_text)
        rule = first_matching_rule(self._faults, ctx)
        status: int | None = None  # stays None if the client leaves and the handler is cancelled
        try:
            response = await answer(ctx, rule)
            status = response.status
            return response
        finally:
            self._log.finish(generation, index, status, rule.action if rule else None)

    async def _reply(
        self, request: web.Request, payload: Any, ctx: RequestContext, rule: FaultRule | None
    ) -> web.StreamResponse:
        """Latency first (every reply waits), then a real API's checks (auth, shape)."""
        if self._latency_s:
            await self._sleep(self._latency_s)
        if not self._authorised(request):
            return error_response(BAD_API_KEY)
        problem = request_problem(payload, self._dialect)
        if problem is None and self._known_models_only:
            problem = unknown_model(payload, self._models)
        if problem is not None:
            return error_response(problem)
        try:
            return await self._apply(request, payload, ctx, rule)
        except Exception as exc:  # a policy bug must reach the test as a 500, not a hang
            return policy_error_response(exc)

    async def _apply(
        self,
        request: web.Request,
        payload: dict[str, Any],
        ctx: RequestContext,
        rule: FaultRule | None,
    ) -> web.StreamResponse:
        """The normal reply, or the reply that ``rule``'s fault calls for."""
        if rule is None:
            return self._completion(payload, ctx, self._policy(payload, ctx))
        action = rule.action
        if action in HTTP_FAULTS:
            retry_after = {"Retry-After": seconds_header(rule.retry_after_s)}
            return error_response(
                HTTP_FAULTS[action], retry_after if action == "http_429" else None
            )
        if action in CONTENT_FAULTS:
            content = CONTENT_FAULTS[action]
            refusal = content if action == "refusal" else None
            return self._completion(payload, ctx, content, refusal)
        if action == "fence_echo":
            return self._completion(payload, ctx, self._fence_echo(payload, ctx))
        if action == "timeout":
            await self._sleep(rule.timeout_s)
            return self._completion(payload, ctx, self._policy(payload, ctx))
        body = completion_body(ctx, estimate_prompt_tokens(payload), self._policy(payload, ctx))
        return await reset_mid_body(request, body)

    @staticmethod
    def _completion(
        payload: dict[str, Any], ctx: RequestContext, content: str, refusal: str | None = None
    ) -> web.Response:
        body = completion_body(ctx, estimate_prompt_tokens(payload), content, refusal)
        return web.Response(body=body, content_type="application/json")

    def _fence_echo(self, payload: dict[str, Any], ctx: RequestContext) -> str:
        """Valid verdict JSON whose explanation quotes the (untrusted) response verbatim."""
        verdict = verdict_of(self._policy(payload, ctx))
        prompt = parse_judge_prompt(payload)
        quoted = prompt.response if prompt is not None else ctx.last_user_message
        return verdict_json(verdict, f"The response says: {quoted}")

    async def _list_models(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return error_response(BAD_API_KEY)
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self._models
        ]
        return json_response({"object": "list", "data": data})

    async def _get_requests(self, request: web.Request) -> web.Response:
        records = [dataclasses.asdict(r) for r in self._log.records()]
        counts = self._log.count_by_body_hash()
        return json_response({"requests": records, "count_by_body_hash": counts})

    async def _post_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return json_response({"ok": True})

    async def _get_faults(self, request: web.Request) -> web.Response:
        return web.Response(
            text=serialise_fault_rules(self._faults), content_type="application/json"
        )

    async def _post_faults(self, request: web.Request) -> web.Response:
        try:
            rules = parse_fault_rules(await request.read(), source="POST /_fake/faults")
        except InputError as exc:
            return json_response({"error": {"message": str(exc)}}, status=400)
        self.set_faults(rules)
        return json_response({"ok": True, "count": len(rules)})

    # -- running inside the current event loop -----------------------------------------

    async def start_async(self) -> None:
        """Bind 127.0.0.1 and serve from the running loop."""
        if self._runner is not None:
            raise FakeServerError("the fake server is already running")
        runner = web.AppRunner(
            self._make_app(),
            access_log=None,  # per-request logging would dominate at thousands of requests/s
            handler_cancellation=True,  # a client that gives up ends a stalled handler
            shutdown_timeout=_SHUTDOWN_GRACE_S,
        )
        await runner.setup()
        site = web.TCPSite(runner, HOST, self._requested_port, backlog=_BACKLOG)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = runner.addresses[0][1]

    async def stop_async(self) -> None:
        """Stop serving; in-flight replies get a short grace period."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> Self:
        await self.start_async()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop_async()

    # -- running in a background thread ------------------------------------------------

    def start(self) -> None:
        """Serve from a background thread with its own event loop; returns once listening."""
        if self._thread is not None:
            raise FakeServerError("the fake server is already running")
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._run_thread, args=(started,), name="fake-openai-server", daemon=True
        )
        self._thread.start()
        try:
            started.result(timeout=_START_TIMEOUT_S)
        except BaseException:
            self._thread.join()
            self._thread = None
            raise

    def stop(self) -> None:
        """Stop the background thread started by :meth:`start` (a no-op if not started)."""
        thread, loop, stop = self._thread, self._thread_loop, self._thread_stop
        if thread is None:
            return
        if loop is not None and stop is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
        thread.join()
        self._thread = self._thread_loop = self._thread_stop = None
        error, self._thread_error = self._thread_error, None
        if error is not None:
            raise FakeServerError(f"the fake server thread failed: {error!r}") from error

    def _run_thread(self, started: concurrent.futures.Future[None]) -> None:
        try:
            asyncio.run(self._serve_in_thread(started))
        except BaseException as exc:  # surfaced by start() or stop(), not lost in the thread
            if not started.done():
                started.set_exception(exc)
            else:
                self._thread_error = exc

    async def _serve_in_thread(self, started: concurrent.futures.Future[None]) -> None:
        self._thread_stop = asyncio.Event()
        self._thread_loop = asyncio.get_running_loop()
        await self.start_async()
        started.set_result(None)
        try:
            await self._thread_stop.wait()
        finally:
            await self.stop_async()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
