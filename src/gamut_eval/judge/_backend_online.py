"""The online backends: a client answers each request while the pass runs.

``fast`` (aiohttp: OpenAI-compatible, Anthropic's Messages API for ``anthropic/``
judges, Gemini's generateContent for ``google/`` judges) and ``inspect`` (Inspect AI's
model API) differ only in the client, which the resolved judge names (``open_client``,
by the registry: ``_registry.CLIENTS``); the loop is this module's: a bounded queue feeds
``concurrency`` workers, each asks one check at a time (``ask``), re-asking a malformed
reply at once with the conversation so far, and records the settled row. A client is
made inside the pass's event loop (clients hold connections bound to one loop) and closed
at the end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gamut_eval.judge._client import Executor, JudgeCallError
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
    from gamut_eval.judge._pass import JudgeWork, Pending

__all__ = ["OnlineBackend", "ask", "make_client", "online_backend", "open_client"]

ClientFactory = Callable[[JudgeSettings], Executor]


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
        try:
            outcome = await client.complete(request_messages(first, prior), response_format)
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
    client_factory: ClientFactory | None = None
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
            client.on_note = work.note
        try:
            await _drive(client, work)
        finally:
            await client.aclose()


async def _drive(client: Executor, work: JudgeWork) -> None:
    settings = work.settings
    queue: asyncio.Queue[tuple[str, str, RenderedResponse] | None] = asyncio.Queue(
        maxsize=settings.concurrency * 2
    )

    async def produce() -> None:
        pending: Pending
        for pending in work.pending():
            rendered = pending.rendered
            for key, check in pending.checks:
                await queue.put((key, check.text, rendered))
        for _ in range(settings.concurrency):
            await queue.put(None)

    async def consume() -> None:
        while (item := await queue.get()) is not None:
            work.record(await ask(client, *item, settings))

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(produce())
            for _ in range(settings.concurrency):
                group.create_task(consume())
    except BaseExceptionGroup as group_error:  # the first failure, as itself (exit codes)
        raise group_error.exceptions[0] from None


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
