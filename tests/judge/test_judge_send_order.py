"""The order checks are sent in: one answer's checks together, its first one first, and
the pipeline across answers kept full (``_backend_online.judge_in_order``)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest

from gamut_eval.judge._backend_online import Answer, judge_in_order
from gamut_eval.judge._client import ChatMessage, Completion
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._prompt import render_response
from gamut_eval.judge._resolve import resolve_endpoint
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.testing import verdict_json


class HeldServer:
    """A client whose replies the test releases: ``step`` answers every call under way
    (in an order of the test's choosing), so the test counts the round trips a pass took
    and sees which calls were under way together."""

    judge_id = "fake/held"

    def __init__(self, seed: int | None = None) -> None:
        self.sent: list[str] = []
        """The check of each call, in the order they were made."""
        self.together: list[list[str]] = []
        """The checks under way at each step."""
        self._held: list[tuple[str, asyncio.Future[None]]] = []
        self._rng = random.Random(seed) if seed is not None else None

    async def complete(
        self, messages: list[ChatMessage], response_format: dict[str, Any] | None
    ) -> Completion:
        check = _check_of(messages)
        self.sent.append(check)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._held.append((check, done))
        await done
        return Completion(verdict_json("meets", "ok"))

    async def aclose(self) -> None:
        return None

    async def step(self) -> bool:
        """Let every runnable task run, then answer the calls under way; False if none."""
        for _ in range(50):
            await asyncio.sleep(0)
        held, self._held = self._held, []
        if not held:
            return False
        self.together.append([check for check, _ in held])
        if self._rng is not None:
            self._rng.shuffle(held)
        for _, done in held:
            done.set_result(None)
        return True


def _check_of(messages: list[ChatMessage]) -> str:
    text = messages[-1]["content"]
    text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
    return next(word for word in text.split() if word.startswith("A") and "c" in word)


def answers(count: int, checks: int) -> list[Answer]:
    return [
        (
            render_response(f"Question {a}?", f"Answer {a}."),
            [(f"key-A{a}c{c}", f"A{a}c{c} is stated.") for c in range(checks)],
        )
        for a in range(count)
    ]


async def judge(server: HeldServer, plan: list[Answer], concurrency: int) -> list[StoredVerdict]:
    settings = JudgeSettings(judge="openai-api/fake/held", concurrency=concurrency, max_reasks=0)
    rows: list[StoredVerdict] = []
    task = asyncio.ensure_future(judge_in_order(server, plan, settings, rows.append))
    while not task.done():
        if not await server.step():
            await asyncio.sleep(0)
    await task
    return rows


def answer_of(check: str) -> str:
    return check.partition("c")[0]


async def test_one_at_a_time_the_checks_go_in_plan_order() -> None:
    server = HeldServer()
    rows = await judge(server, answers(3, 4), concurrency=1)
    assert server.sent == [f"A{a}c{c}" for a in range(3) for c in range(4)]
    assert len(rows) == 12


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_an_answers_first_check_comes_back_before_the_rest_go_out(seed: int) -> None:
    server = HeldServer(seed)
    await judge(server, answers(12, 5), concurrency=8)
    for a in range(12):
        first = next(i for i, group in enumerate(server.together) if f"A{a}c0" in group)
        rest = [i for i, group in enumerate(server.together) for c in group if c != f"A{a}c0"
                and answer_of(c) == f"A{a}"]  # fmt: skip
        assert rest
        assert min(rest) > first
        assert server.sent.index(f"A{a}c0") < min(server.sent.index(f"A{a}c{c}") for c in (1, 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_the_rest_of_an_answers_checks_go_out_together(seed: int) -> None:
    server = HeldServer(seed)
    await judge(server, answers(12, 6), concurrency=8)
    rests = [c for c in server.sent if not c.endswith("c0")]
    for a in range(12):
        positions = [i for i, c in enumerate(rests) if answer_of(c) == f"A{a}"]
        # no other answer's checks between them (first checks aside, which open answers)
        assert positions == list(range(positions[0], positions[0] + 5))


async def test_at_scale_the_pipeline_stays_full() -> None:
    # 50 answers of 10 checks through 16 slots: 500 calls need at least 32 round trips;
    # waiting for each answer's first check costs one round trip, hidden behind the others.
    server = HeldServer(0)
    rows = await judge(server, answers(50, 10), concurrency=16)
    assert len(rows) == 500
    assert len(server.together) <= 500 // 16 + 3
    assert max(len(group) for group in server.together) == 16


# -- leaving ---------------------------------------------------------------------------------


async def test_a_stopped_pass_closes_every_connection_it_had_open() -> None:
    # A server holds every request; the pass is stopped (the user's Ctrl-C, a fatal error
    # elsewhere). Each request's connection is closed at once, so a server that checks
    # (vLLM; llama-cpp-python for requests it has not started) can drop the work.
    arrived: list[int] = []
    left: list[int] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # a request, held unanswered
        arrived.append(len(arrived))
        while await reader.read(65536):  # its body, then nothing until the client leaves
            pass
        left.append(len(left))
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    endpoint = resolve_endpoint(
        "openai/local-judge", base_url=f"http://127.0.0.1:{port}/v1", api_key="none"
    )
    settings = JudgeSettings(
        judge="openai/local-judge", concurrency=3, adaptive_concurrency=False, max_retries=0
    )
    try:
        async with OpenAIExecutor(endpoint, settings) as client:
            task = asyncio.ensure_future(
                judge_in_order(client, answers(4, 3), settings, lambda row: None)
            )
            while len(arrived) < 3:  # the first checks of three answers
                await asyncio.sleep(0.01)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # still inside the client's session: the calls' own cancellation closed them
            async with asyncio.timeout(30):
                while len(left) < len(arrived):
                    await asyncio.sleep(0.01)
        assert len(arrived) == len(left) == 3
    finally:
        server.close()
        await server.wait_closed()
