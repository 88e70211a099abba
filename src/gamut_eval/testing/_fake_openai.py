"""A deterministic fake OpenAI-compatible chat-completions server for tests and benchmarks.

It listens on 127.0.0.1 only (a random free port by default), speaks enough of the chat
completions format for the ``openai`` SDK and Inspect AI's ``openai-api`` provider, logs
every request by a hash of its canonical body, and injects the judge-output faults of
docs/reliability.md section B on demand. Run it in a background thread (``with``), inside a
running loop (``async with``), or as a separate process (``fake_openai`` module CLI).

The wire format is written here too: bodies are built as bytes with ``json.dumps`` once per
reply, which keeps the fake cheap at thousands of requests/s. ``DIALECTS`` are what the
servers it stands for refuse. Every fake emulates its provider's prompt cache by the
documented rules (``_prompt_caches``): this one OpenAI's, whatever the model, and reports
the tokens it served as ``prompt_tokens_details.cached_tokens``; ``reported_usage`` sums
what the replies reported.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import hashlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, ClassVar, Self

from aiohttp import web

from gamut_eval.errors import InputError
from gamut_eval.scoring import Verdict
from gamut_eval.testing._faults import (
    CONTENT_FAULTS,
    HTTP_FAULTS,
    FaultRule,
    HttpFault,
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
from gamut_eval.testing._prompt_caches import CacheUse, PromptCache, openai_cache_use
from gamut_eval.testing._requests import (
    RequestContext,
    RequestLog,
    RequestRecord,
    body_hash,
    last_user_message,
    prompt_text,
)

HOST = "127.0.0.1"
"""The only interface the fake listens on: it must never be reachable from the network."""
DEFAULT_MODELS: tuple[str, ...] = ("fake-judge",)

_MAX_BODY_BYTES = 64 * 1024 * 1024  # judge prompts may carry base64 images
_BACKLOG = 1024  # benchmarks open many keep-alive connections at once
_SHUTDOWN_GRACE_S = 1.0  # bounded so a stalled "timeout" fault never delays stop()
_START_TIMEOUT_S = 30.0

_MALFORMED = HttpFault(400, "invalid_request_error", None, "Body must be a JSON object.")
_NO_MESSAGES = HttpFault(400, "invalid_request_error", None, "'messages' must be a list.")
_NO_STREAM = HttpFault(400, "invalid_request_error", None, "The fake server cannot stream.")


def json_response(
    payload: object, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON reply serialised once, straight to bytes."""
    body = json.dumps(payload).encode()
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


def error_response(fault: HttpFault, headers: dict[str, str] | None = None) -> web.Response:
    """An OpenAI-style ``{"error": {message, type, param, code}}`` reply."""
    error = {"message": fault.message, "type": fault.type, "param": None, "code": fault.code}
    return json_response({"error": error}, fault.status, headers)


def output_tokens(content: str) -> int:
    """Completion tokens of a reply, as the fakes count them."""
    return max(1, len(content) // 4)


def parse_body(raw: bytes) -> tuple[Any, str]:
    """The parsed body (None if not JSON) and its hash; raw bytes are hashed if not JSON."""
    try:
        payload = json.loads(raw)
    except ValueError:
        return None, hashlib.sha256(raw).hexdigest()
    return payload, body_hash(payload)


DIALECTS = ("openai", "openai-reasoning", "llama-cpp")
"""What the fake refuses, as the servers it stands for do:

- ``openai``: a chat model; takes every parameter gamut sends.
- ``openai-reasoning``: an OpenAI reasoning model (o series, gpt-5): ``max_tokens`` and
  any temperature but 1 are refused with OpenAI's own 400 bodies.
- ``llama-cpp``: llama-cpp-python's server with a text-only model: ``response_format`` of
  type ``json_schema`` is answered with HTTP 500 and a validation error (it takes
  ``json_object`` with a schema), and a message with an image part with HTTP 500 from its
  chat template, which renders text content only.
"""
_NO_MAX_TOKENS = HttpFault(
    400,
    "invalid_request_error",
    "unsupported_parameter",
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
)
_NO_TEMPERATURE = HttpFault(
    400,
    "invalid_request_error",
    "unsupported_value",
    "Unsupported value: 'temperature' does not support 0.0 with this model. "
    "Only the default (1) value is supported.",
)
_NO_JSON_SCHEMA = HttpFault(
    500,
    "internal_server_error",
    None,
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should "
    "be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]",
)
_NO_IMAGES = HttpFault(
    500,
    "internal_server_error",
    None,
    'can only concatenate str (not "list") to str: the chat template renders text '
    "content only (the message has an image_url part)",
)


def request_problem(payload: Any, dialect: str = "openai") -> HttpFault | None:
    """Why a real API of ``dialect`` would refuse this body, or None."""
    if not isinstance(payload, dict):
        return _MALFORMED
    if not isinstance(payload.get("messages"), list):
        return _NO_MESSAGES
    if payload.get("stream"):
        return _NO_STREAM
    if dialect == "openai-reasoning":
        if "max_tokens" in payload:
            return _NO_MAX_TOKENS
        if payload.get("temperature", 1) != 1:
            return _NO_TEMPERATURE
    if dialect == "llama-cpp":
        response_format = payload.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
            return _NO_JSON_SCHEMA
        if any(
            isinstance(part, dict) and part.get("type") == "image_url"
            for message in payload["messages"]
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for part in message["content"]
        ):
            return _NO_IMAGES
    return None


def seconds_header(seconds: float) -> str:
    """Whole seconds as HTTP says ("2"); fractions ("0.3") only if a fast test asks for them."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def verdict_of(reply: str) -> str:
    """The ``verdict`` of a policy's JSON reply (``missing`` when there is none)."""
    try:
        verdict = json.loads(reply).get("verdict")
    except (ValueError, AttributeError):
        return Verdict.MISSING.value
    return verdict if isinstance(verdict, str) else Verdict.MISSING.value


async def reset_mid_body(request: web.Request, body: bytes) -> web.StreamResponse:
    """Promise the whole body, send half, then abort the TCP connection."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(body)
    await response.prepare(request)
    await response.write(body[: len(body) // 2])
    if request.transport is not None:
        request.transport.abort()
    return response


class FakeOpenAIServer:
    """Fake ``/v1/chat/completions`` and ``/v1/models`` on 127.0.0.1.

    Use ``with FakeOpenAIServer() as srv`` (background thread with its own event loop) or
    ``async with FakeOpenAIServer() as srv`` (inside the running loop); then point a client
    at ``srv.base_url``. ``srv.requests`` is the request log, ``srv.set_faults`` changes
    the injected faults while it runs. ``sleep`` is what the fake waits with (the reply
    latency, a ``timeout`` fault's stall); tests pass their own to hold replies at will.
    ``reply_tokens``: what every reply needs; one asked with a smaller ``max_tokens`` (or
    ``max_completion_tokens``) is cut in half with ``finish_reason: length``, as a real
    server cuts a reply at the bound.
    """

    _LENGTH: ClassVar[str | None] = "length"
    """The finish reason of a reply cut at its ``max_tokens`` (``reply_tokens``); None: the
    fake never cuts replies."""

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
        reply_tokens: int | None = None,
    ) -> None:
        if latency_ms < 0:
            raise ValueError(f"latency_ms must be >= 0; got {latency_ms}")
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
        self._dialect = dialect
        self._reply_tokens = reply_tokens
        self._known_models_only = known_models_only
        self._policy = as_policy_function(policy)
        self._faults: tuple[FaultRule, ...] = tuple(faults)
        self._latency_s = latency_ms / 1000
        self._sleep = sleep
        self._models = tuple(models)
        self._api_key = api_key
        self._expected_auth = None if api_key is None else f"Bearer {api_key}"
        self._prompt_cache = PromptCache()
        self._cache_uses: dict[int, CacheUse] = {}
        """What each request in flight looked up in the cache when it arrived, by index."""
        self._usage: Counter[str] = Counter()
        self._usage_lock = threading.Lock()
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

    def reported_usage(self) -> dict[str, int]:
        """The token counts the replies so far reported, summed: ``prompt`` (cached and
        written tokens included), ``cached`` (served from the prompt cache), ``written``
        (written to it, where the provider reports writes) and ``output``."""
        with self._usage_lock:
            return {name: self._usage[name] for name in ("prompt", "cached", "written", "output")}

    # -- the prompt cache --------------------------------------------------------------

    def _cache_use(self, payload: Any, model: str) -> CacheUse | None:
        """What a request arriving with ``payload`` finds in the cache (before its reply
        latency: requests that arrive together all miss)."""
        if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
            return None
        return openai_cache_use(self._prompt_cache, prompt_text(payload))

    def _answered(self, ctx: RequestContext, output: int) -> CacheUse | None:
        """A request is answered: its prefixes are cached from now on, and its usage
        counted. Returns what it found when it arrived."""
        use = self._cache_uses.pop(ctx.index, None)
        if use is None:
            return None
        self._prompt_cache.add(use.prefixes)
        with self._usage_lock:
            self._usage.update(
                prompt=use.prompt_tokens, cached=use.read, written=use.written, output=output
            )
        return use

    @property
    def faults(self) -> tuple[FaultRule, ...]:
        """The fault rules in force, first match wins."""
        return self._faults

    def set_faults(self, rules: Iterable[FaultRule]) -> None:
        """Replace the fault rules; safe from any thread (one atomic attribute swap)."""
        self._faults = tuple(rules)

    # -- HTTP handlers -----------------------------------------------------------------

    def _make_app(self) -> web.Application:
        """The provider's routes (``_add_routes``), then the test-control endpoints every
        fake shares (request log, reset, faults)."""
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        self._add_routes(app.router)
        app.router.add_get("/_fake/requests", self._get_requests)
        app.router.add_post("/_fake/reset", self._post_reset)
        app.router.add_get("/_fake/faults", self._get_faults)
        app.router.add_post("/_fake/faults", self._post_faults)
        return app

    def _add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self._receive)
        router.add_get("/v1/models", self._list_models)

    def _authorised(self, request: web.Request) -> bool:
        expected = self._expected_auth
        return expected is None or request.headers.get("Authorization") == expected

    async def _receive(self, request: web.Request) -> web.StreamResponse:
        """A request whose body names its model (OpenAI's, Anthropic's)."""
        payload, digest = parse_body(await request.read())
        model = payload.get("model") if isinstance(payload, dict) else None
        model = sys.intern(model) if isinstance(model, str) else ""  # one copy per name in the log
        user_text = last_user_message(payload) if isinstance(payload, dict) else ""
        use = self._cache_use(payload, model)
        return await self._logged(request, payload, digest, model, user_text, use)

    async def _logged(
        self,
        request: web.Request,
        payload: Any,
        digest: str,
        model: str,
        user_text: str,
        cache_use: CacheUse | None,
        chat: dict[str, Any] | None = None,
    ) -> web.StreamResponse:
        """Log a request's arrival, pick its fault rule, answer it, log its status.
        ``cache_use``: what it found in the prompt cache on arrival, for its reply;
        ``chat``: the request as the policies read it, when it is not ``payload``."""
        generation, index, seen = self._log.arrive(digest, model)
        ctx = RequestContext(index, digest, seen, model, user_text)
        if cache_use is not None:
            self._cache_uses[index] = cache_use
        rule = next((rule for rule in self._faults if rule.matches(ctx)), None)  # first wins
        status: int | None = None  # stays None if the client leaves and the handler is cancelled
        try:
            response = await self._reply(request, payload, chat or payload, ctx, rule)
            status = response.status
            return response
        finally:
            self._cache_uses.pop(index, None)  # a request that got no reply caches nothing
            self._log.finish(generation, index, status, rule.action if rule else None)

    async def _reply(
        self,
        request: web.Request,
        payload: Any,
        chat: Any,
        ctx: RequestContext,
        rule: FaultRule | None,
    ) -> web.StreamResponse:
        """Latency first (every reply waits), then a real API's checks (``_refusal``), then
        the normal reply or the one ``rule``'s fault calls for."""
        if self._latency_s:
            await self._sleep(self._latency_s)
        refusal = self._refusal(request, payload, ctx)
        if refusal is not None:
            return refusal
        try:
            return await self._apply(request, payload, chat, ctx, rule)
        except Exception as exc:  # a policy bug must reach the test as a 500, not a hang
            return self._failed(f"policy failed: {type(exc).__name__}: {exc}")

    async def _apply(
        self,
        request: web.Request,
        payload: dict[str, Any],
        chat: dict[str, Any],
        ctx: RequestContext,
        rule: FaultRule | None,
    ) -> web.StreamResponse:
        """The normal reply, or the reply that ``rule``'s fault calls for: an HTTP or content
        fault in the provider's format (``_fault_reply``), or one every provider answers
        alike."""
        if rule is None:
            content = self._policy(chat, ctx)
            bound = payload.get("max_tokens", payload.get("max_completion_tokens"))
            needed = self._reply_tokens
            if self._LENGTH and needed is not None and isinstance(bound, int) and bound < needed:
                return self._reply_with(payload, ctx, content[: len(content) // 2], self._LENGTH)
            return self._reply_with(payload, ctx, content)
        fault = self._fault_reply(payload, ctx, rule)
        if fault is not None:
            return fault
        if rule.action == "fence_echo":
            return self._reply_with(payload, ctx, self._fence_echo(chat, ctx))
        if rule.action == "timeout":
            await self._sleep(rule.timeout_s)
            return self._reply_with(payload, ctx, self._policy(chat, ctx))
        return await reset_mid_body(request, self._body(payload, ctx, self._policy(chat, ctx)))

    def _refusal(
        self, request: web.Request, payload: Any, ctx: RequestContext
    ) -> web.Response | None:
        """The error a real API answers this request with (auth, shape), or None."""
        if not self._authorised(request):
            return error_response(HTTP_FAULTS["http_401"])
        problem = request_problem(payload, self._dialect)
        if problem is None and self._known_models_only and payload.get("model") not in self._models:
            problem = HttpFault(
                404,
                "invalid_request_error",
                "model_not_found",
                f"The model `{payload.get('model')}` does not exist or you do not have access "
                "to it.",
            )
        return None if problem is None else error_response(problem)

    def _failed(self, message: str) -> web.Response:
        """A 500 naming the exception a policy raised, so the test sees why."""
        return error_response(HttpFault(500, "server_error", "policy_error", message))

    def _fault_reply(
        self, payload: dict[str, Any], ctx: RequestContext, rule: FaultRule
    ) -> web.Response | None:
        """The reply to an HTTP or a content fault; None for the other faults."""
        action = rule.action
        if action in HTTP_FAULTS:
            retry_after = {"Retry-After": seconds_header(rule.retry_after_s)}
            return error_response(
                HTTP_FAULTS[action], retry_after if action == "http_429" else None
            )
        if action in CONTENT_FAULTS:
            content = CONTENT_FAULTS[action]
            return self._reply_with(
                payload, ctx, content, refusal=content if action == "refusal" else None
            )
        return None

    def _reply_with(
        self,
        payload: dict[str, Any],
        ctx: RequestContext,
        text: str,
        finish: str | None = None,
        refusal: str | None = None,
    ) -> web.Response:
        body = self._body(payload, ctx, text, finish, refusal)
        return web.Response(body=body, content_type="application/json")

    def _body(
        self,
        payload: dict[str, Any],
        ctx: RequestContext,
        text: str,
        finish: str | None = None,
        refusal: str | None = None,
    ) -> bytes:
        """A reply with ``text`` in the provider's format, as bytes (here a ``chat.completion``
        object with one choice); ``finish``: why it ended (None: it is whole), in the
        provider's words."""
        finish = finish or "stop"
        completion_tokens = output_tokens(text)
        use = self._answered(ctx, completion_tokens)
        if use is None:  # the usual rough estimate, nothing cached
            use = CacheUse(max(1, len(prompt_text(payload)) // 4))
        message = {"role": "assistant", "content": text, "refusal": refusal}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        usage = {
            "prompt_tokens": use.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": use.prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": use.read},
        }
        completion = {
            "id": f"chatcmpl-fake-{ctx.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": ctx.model,
            "choices": [choice],
            "usage": usage,
            "system_fingerprint": "fake",
        }
        return json.dumps(completion).encode()

    def _fence_echo(self, chat: dict[str, Any], ctx: RequestContext) -> str:
        """Valid verdict JSON whose explanation quotes the (untrusted) response verbatim."""
        verdict = verdict_of(self._policy(chat, ctx))
        prompt = parse_judge_prompt(chat)
        quoted = prompt.response if prompt is not None else ctx.last_user_message
        return verdict_json(verdict, f"The response says: {quoted}")

    async def _list_models(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return error_response(HTTP_FAULTS["http_401"])
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
