"""What a self-hosted server says about its slots sets where the limit starts; an answer
that is absent or malformed changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._concurrency import (
    START,
    ServerSlots,
    hosted_api,
    server_root,
    slots_from_metrics,
    slots_from_props,
    slots_from_slots,
)
from gamut_eval.judge._resolve import resolve_endpoint
from gamut_eval.judge._settings import JudgeSettings

VLLM_METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen"} %s
vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 7.0
"""
LLAMA_METRICS = """\
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
llamacpp:requests_deferred 3
"""


@pytest.mark.parametrize(
    ("payload", "slots"),
    [({"total_slots": 4, "model_path": "m.gguf"}, 4), ({"total_slots": 1}, 1),
     ({"total_slots": 2.0}, 2)],
)  # fmt: skip
def test_llama_servers_props_name_its_slots(payload: Any, slots: int) -> None:
    assert slots_from_props(payload) == ServerSlots("/props total_slots", slots)


@pytest.mark.parametrize(
    "payload",
    [{"total_slots": 0}, {"total_slots": -1}, {"total_slots": "4"}, {"total_slots": True},
     {"total_slots": 2.5}, {"total_slots": None}, {}, [], "html", None],
)  # fmt: skip
def test_malformed_props_are_no_hint(payload: Any) -> None:
    assert slots_from_props(payload) is None


def test_llama_servers_slots_list_counts_its_slots() -> None:
    two = [{"id": 0, "is_processing": True}, {"id": 1, "is_processing": False}]
    assert slots_from_slots(two) == ServerSlots("/slots", 2)
    for payload in ([], [{"is_processing": True}], [1, 2], {"id": 0}, None):
        assert slots_from_slots(payload) is None


def test_vllm_metrics_say_whether_it_has_room() -> None:
    idle = slots_from_metrics(VLLM_METRICS % "0.0")
    assert idle == ServerSlots("/metrics (vLLM)", None, 0)
    assert idle.start(64) == 64  # it batches: fed the whole --concurrency
    busy = slots_from_metrics(VLLM_METRICS % "3.0")
    assert busy is not None
    assert busy.waiting == 3
    assert busy.start(64) is None  # others already queue there: start low
    assert ServerSlots("/props total_slots", 4).start(64) == 4
    assert ServerSlots("/props total_slots", 128).start(64) == 64


@pytest.mark.parametrize(
    "text", [LLAMA_METRICS, VLLM_METRICS % "NaN", VLLM_METRICS % "-1", VLLM_METRICS % "x", ""]
)
def test_other_or_malformed_metrics_are_no_hint(text: str) -> None:
    assert slots_from_metrics(text) is None


def test_the_hosted_apis_are_never_asked() -> None:
    assert hosted_api("https://api.openai.com/v1")
    assert hosted_api("https://api.anthropic.com")
    assert not hosted_api("http://127.0.0.1:8080/v1")
    assert not hosted_api("http://gpu-node:8000/v1")
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://host/llama/v1/") == "http://host/llama"


# -- through the client ---------------------------------------------------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Routes = dict[str, Handler]


def reply(status: int = 200, **kwargs: Any) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, **kwargs)

    return handle


@pytest.fixture
async def server_with() -> AsyncIterator[Callable[[Routes], Any]]:
    servers: list[TestServer] = []
    asked: list[str] = []

    async def start(routes: Routes) -> tuple[str, list[str]]:
        app = web.Application()

        @web.middleware
        async def log(request: web.Request, handler: Any) -> web.StreamResponse:
            asked.append(request.path)
            response: web.StreamResponse = await handler(request)
            return response

        app.middlewares.append(log)
        for path, handler in routes.items():
            app.router.add_get(path, handler)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        return str(server.make_url("/v1")), asked

    yield start
    for server in servers:
        await server.close()


def client(base_url: str, **settings: Any) -> OpenAIExecutor:
    endpoint = resolve_endpoint("openai/local-judge", base_url=base_url, api_key="none")
    return OpenAIExecutor(endpoint, JudgeSettings(judge="openai/local-judge", **settings))


ALL = ["/props", "/slots", "/metrics"]


@pytest.mark.parametrize(
    ("routes", "window", "asked", "noted"),
    [
        ({"/props": reply(text='{"total_slots": 3}')}, 3, ["/props"], True),
        ({"/slots": reply(text='[{"id": 0}, {"id": 1}]')}, 2, ["/props", "/slots"], True),
        ({"/metrics": reply(text=VLLM_METRICS % "0.0")}, 64, ALL, True),
        ({"/metrics": reply(text=VLLM_METRICS % "5.0")}, START, ALL, False),
        ({}, START, ALL, False),  # llama-cpp-python: 404, 404, 404
        ({"/props": reply(text="<html>llama</html>"), "/slots": reply(501),
          "/metrics": reply(text=LLAMA_METRICS)}, START, ALL, False),
    ],
)  # fmt: skip
async def test_the_limit_starts_where_the_server_says(
    server_with: Callable[[Routes], Any],
    routes: Routes,
    window: int,
    asked: list[str],
    noted: bool,
) -> None:
    url, log = await server_with(routes)
    notes: list[str] = []
    async with client(url) as judge:
        judge.on_note = notes.append
        assert judge.window == START
        await judge.prepare()
        await judge.prepare()  # once only
        assert judge.window == window
    assert log == asked
    assert len(notes) == noted
    if routes.get("/props") and window == 3:
        assert "/props total_slots says it serves 3 requests at once" in notes[0]


async def test_no_hint_is_asked_of_a_hosted_api_a_probe_or_a_fixed_limit(
    server_with: Callable[[Routes], Any],
) -> None:
    url, log = await server_with({"/props": reply(text='{"total_slots": 3}')})
    for judge in (client(url, concurrency=1), client(url, adaptive_concurrency=False)):
        await judge.prepare()
        await judge.aclose()
    assert log == []
    hosted = client("https://api.openai.com/v1")
    assert hosted.window == 64  # fed the whole --concurrency from the start
    async with aiohttp.ClientSession() as session:  # never used: nothing is sent
        assert await hosted._server_slots(session) is None
