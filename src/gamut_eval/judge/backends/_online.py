"""The online backends: a client answers each request while the pass runs.

``fast`` (aiohttp: OpenAI-compatible, Anthropic's Messages API for ``anthropic/``
judges, Gemini's generateContent for ``google/`` judges) and ``inspect`` (Inspect AI's
model API) differ only in the client; the loop is this module's: a bounded queue feeds
``concurrency`` workers, each asks one check at a time (``ask``), re-asking a malformed
reply at once with the conversation so far, and records the settled row. A client is
made inside the pass's event loop (clients hold connections bound to one loop) and closed
at the end.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from gamut_eval.judge._pass import JudgeWork, Pending
from gamut_eval.judge._prompt import RESPONSE_FORMAT, RenderedResponse, render_messages
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._settle import Outcome, Reask, request_messages, settle
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import Executor, JudgeCallError
from gamut_eval.judge.backends import BackendOptions
from gamut_eval.judge.backends._fast import FastExecutor
from gamut_eval.judge.backends._shape import RequestShape

__all__ = [
    "OnlineBackend",
    "ask",
    "fast_backend",
    "inspect_backend",
    "make_client",
]

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
    """Online judging with the client ``client_factory`` makes."""

    client_factory: ClientFactory
    name: str = "fast"
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = True
    """Whether the endpoint gets a probe before the pass (``judge._probe``)."""
    shape: RequestShape | None = None
    """The request shape a probe learned: the run's first request is already right."""

    async def run(self, work: JudgeWork) -> None:
        client = self.client_factory(work.settings)
        if isinstance(client, FastExecutor):
            if self.shape is not None:
                client.shape = dataclasses.replace(
                    self.shape, corrections=list(self.shape.corrections)
                )
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


def make_client(settings: JudgeSettings) -> Executor:
    """The online client ``settings`` asks for (``auto``: fast where the provider speaks
    OpenAI or is Anthropic or Google, inspect otherwise)."""
    from gamut_eval.judge.backends import backend_name

    name = backend_name(settings)
    if name == "fast":
        from gamut_eval.judge._endpoints import resolve_endpoint

        endpoint = resolve_endpoint(settings.judge, base_url=settings.base_url)
        if endpoint.wire == "anthropic":
            from gamut_eval.judge.backends._anthropic import AnthropicExecutor

            return AnthropicExecutor(endpoint, settings)
        if endpoint.wire == "gemini":
            from gamut_eval.judge.backends._gemini import GeminiExecutor

            return GeminiExecutor(endpoint, settings)
        return FastExecutor(endpoint, settings)
    if name == "inspect":
        from gamut_eval.judge.backends._inspect import InspectExecutor

        return InspectExecutor(settings.judge, settings)
    raise ValueError(f"{name} is not an online backend")


def _online(name: str, options: BackendOptions) -> OnlineBackend:
    return OnlineBackend(options.executor_factory or make_client, name, shape=options.shape)


def fast_backend(settings: JudgeSettings, options: BackendOptions) -> OnlineBackend:
    return _online("fast", options)


def inspect_backend(settings: JudgeSettings, options: BackendOptions) -> OnlineBackend:
    return _online("inspect", options)
