"""The online backends: a client answers each request while the pass runs.

``fast`` (aiohttp: OpenAI-compatible, Anthropic's Messages API for ``anthropic/``
judges, Gemini's generateContent for ``google/`` judges) and ``inspect`` (Inspect AI's
model API) differ only in the client, which the resolved judge names (``open_client``,
by the registry: ``_registry.CLIENTS``); the loop is this module's (``judge_in_order``):
each check is asked to the end (``ask``, re-asking a malformed reply at once with the
conversation so far) and its settled row recorded. A client is made inside the pass's
event loop (clients hold connections bound to one loop) and closed at the end.

The send order serves the server's prefix cache. All checks of one answer share their
prompt up to the check, so:

- an answer's first check is sent alone, and the rest of its checks only once it has
  come back: by then a provider has cached the shared prefix (OpenAI, Anthropic, Gemini
  bill cached tokens for less) and a local server holds it in its KV cache;
- the rest of an answer's checks go out together: answers whose first check has come
  back wait their turn in that order, and one answer's checks are all sent before the
  next answer's, so they are not interleaved with another's and the server's cache
  still holds their prefix;
- a slot with nothing ready to send starts the next answer's first check, so at scale
  the first checks of later answers travel while earlier answers' checks are answered
  (the pipeline stays full; the wait for a first check costs one round trip per answer,
  hidden behind the others).

Only as many asks are started as the client's limit lets in (``HttpExecutor.window``,
``--concurrency`` for other clients): those waiting are kept here, in this order, not
in the client's queue, where they would be served in arrival order. An ask waiting out a
server's ``Retry-After`` has given its slot back and is not counted (up to
``--concurrency`` of them), so a throttled request does not hold the others back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gamut_eval.judge._client import Executor, JudgeCallError
from gamut_eval.judge._client_http import HttpExecutor
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._prompt import (
    RESPONSE_FORMAT,
    Outcome,
    Reask,
    RenderedResponse,
    render_messages,
    request_messages,
    settle,
)
from gamut_eval.judge._registry import CLIENTS, ClientKind
from gamut_eval.judge._resolve import BackendOptions, ResolvedJudge, resolve_judge
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict

if TYPE_CHECKING:
    from gamut_eval.judge._pass import JudgeWork


async def ask(
    client: Executor, key: str, check_text: str, rendered: RenderedResponse, settings: JudgeSettings
) -> StoredVerdict:
    """Judge one check to the end: a verdict, or unscored with the reason. Never raises
    for a bad reply or a failed call; a ``JudgeAuthError`` (the run must stop) propagates."""
    first = render_messages(rendered, check_text)
    response_format = RESPONSE_FORMAT if settings.structured_output else None
    prior: Reask | None = None
    while True:
        outcome: Outcome
        messages = request_messages(first, prior)
        try:
            if prior is not None and prior.room is not None:  # the last reply was cut
                outcome = await client.complete(messages, response_format, max_tokens=prior.room)
            else:
                outcome = await client.complete(messages, response_format)
        except JudgeCallError as exc:
            outcome = exc.reason
        result = settle(key, outcome, prior, settings)
        if isinstance(result, StoredVerdict):
            return result
        prior = result


@dataclass
class OnlineBackend:
    """Online judging with the client the resolved judge names (``open_client``)."""

    judge: ResolvedJudge
    client_factory: Callable[[JudgeSettings], Executor] | None = None
    """Makes the client instead (tests inject fakes here)."""
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = True
    """Whether the endpoint gets a probe before the pass (``judge._probe``)."""

    @property
    def name(self) -> str:
        return self.judge.backend

    async def run(self, work: JudgeWork) -> None:
        if self.client_factory is not None:
            client = self.client_factory(work.settings)
        else:
            client = open_client(self.judge, work.settings)
        if isinstance(client, OpenAIExecutor):
            shape = self.judge.shape  # learned by the probe: the first request is right
            if shape is not None:
                client.shape = dataclasses.replace(shape, corrections=list(shape.corrections))
        if isinstance(client, HttpExecutor):
            client.on_note, client.on_wait = work.note, work.wait
        work.watch_unscored = True
        try:
            answers = (
                (pending.rendered, [(key, check.text) for key, check in pending.checks])
                for pending in work.pending()
            )
            await judge_in_order(client, answers, work.settings, work.record)
        finally:
            await client.aclose()


Answer = tuple[RenderedResponse, list[tuple[str, str]]]
"""One answer's shared prefix and its checks still to judge, as (store key, check text)."""


@dataclass(frozen=True, slots=True)
class _Check:
    key: str
    text: str
    rendered: RenderedResponse


async def judge_in_order(
    client: Executor,
    answers: Iterable[Answer],
    settings: JudgeSettings,
    record: Callable[[StoredVerdict], object],
) -> None:
    """Judge every check of ``answers`` in the send order above, recording each settled
    row; a ``JudgeAuthError`` or ``JudgeServerGone`` stops it, cancelling the calls
    under way (their connections close at once)."""
    limited = client if isinstance(client, HttpExecutor) else None
    if limited is not None:
        await limited.prepare()  # the server's slots, before the first window is read
    ceiling = settings.concurrency
    queue = enumerate(answers)
    ready: deque[deque[_Check]] = deque()
    """The answers whose first check came back, in that order, with the checks to send."""
    held: dict[int, deque[_Check]] = {}
    """Each answer's checks waiting for its first to come back."""
    running: dict[asyncio.Task[StoredVerdict], int | None] = {}
    """Each call under way, and the answer whose checks it releases (its first)."""
    finished: asyncio.Queue[asyncio.Task[StoredVerdict] | None] = asyncio.Queue()
    """Each call as it ends; None when one gave its slot back to wait (room for another)."""
    if limited is not None:
        limited.on_room = lambda: finished.put_nowait(None)

    def start(check: _Check, releases: int | None) -> None:
        task = asyncio.ensure_future(ask(client, check.key, check.text, check.rendered, settings))
        running[task] = releases
        task.add_done_callback(finished.put_nowait)

    more = True
    try:
        while True:
            window = min(ceiling, limited.window) if limited is not None else ceiling
            if limited is not None:  # asks waiting out a Retry-After hold no slot
                window += min(ceiling, limited.waiting)
            while len(running) < window:
                if ready:
                    start(ready[0].popleft(), None)
                    if not ready[0]:
                        ready.popleft()
                    continue
                nxt = next(queue, None) if more else None
                if nxt is None:
                    more = False
                    break
                index, (rendered, checks) = nxt
                if not checks:
                    continue
                answer = deque(_Check(key, text, rendered) for key, text in checks)
                first = answer.popleft()
                if answer:
                    held[index] = answer
                start(first, index if answer else None)
            if not running:
                return
            task = await finished.get()
            if task is None:
                continue
            releases = running.pop(task)
            record(task.result())
            if releases is not None:
                ready.append(held.pop(releases))
    finally:
        if limited is not None:
            limited.on_room = None
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)


def open_client(judge: ResolvedJudge, settings: JudgeSettings | None = None) -> Executor:
    """The client ``judge`` names (``_registry.CLIENTS``), with ``settings`` (default: the
    judge's own) for its timeouts, retries and request fields."""
    settings = settings or judge.settings
    if judge.client == "inspect":
        return _client_class("inspect")(judge.judge, settings)
    if judge.client is None and not judge.problem:
        raise ValueError(f"the {judge.backend} backend sends no requests")
    endpoint = judge.require_endpoint()
    return _client_class(judge.client or "openai")(endpoint, settings)


def _client_class(kind: ClientKind) -> Callable[..., Executor]:
    """The client class registered for ``kind``, its module imported now."""
    module, _, name = CLIENTS[kind].partition(":")
    client_class: Callable[..., Executor] = getattr(importlib.import_module(module), name)
    return client_class


def make_client(settings: JudgeSettings) -> Executor:
    """The online client ``settings`` ask for (``auto``: fast where the provider speaks
    OpenAI or is Anthropic or Google, inspect otherwise)."""
    judge = resolve_judge(settings)
    if judge.backend not in ("fast", "inspect"):
        raise ValueError(f"{judge.backend} is not an online backend")
    return open_client(judge)


def online_backend(judge: ResolvedJudge, options: BackendOptions) -> OnlineBackend:
    """``fast`` and ``inspect``: the resolved judge names the client."""
    return OnlineBackend(judge, options.executor_factory)
