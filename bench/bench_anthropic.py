"""Throughput of the Anthropic Messages client beside the OpenAI-compatible one.

Both fakes (``FakeAnthropicServer``, ``FakeOpenAIServer``) run in their own processes with
the fixed-reply policy and no latency; the same rendered judge requests (paper-sized
rubrics, ~600-token answers) go through ``AnthropicExecutor`` and ``OpenAIExecutor`` at
concurrency 64, alternating, best of each kept (the machine is shared). Prints checks/s
of each and ``anthropic / openai-compatible: X x (target >= 0.8 x) PASS|FAIL``.
Usage: python bench/bench_anthropic.py [--quick]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import verdict_line
from bench_judge import requests_for, write_data
from gamut_eval.judge import (
    RESPONSE_FORMAT,
    AnthropicExecutor,
    JudgeSettings,
    OpenAIExecutor,
    resolve_endpoint,
)
from gamut_eval.testing import FakeAnthropicServer, FakeOpenAIServer

CONCURRENCY = 64
KEY = "bench-key"


def serve(kind: str) -> None:
    """Child process: run one fake until stdin closes."""
    server_class = FakeAnthropicServer if kind == "anthropic" else FakeOpenAIServer
    server = server_class(policy="fixed", api_key=KEY)
    with server:
        print(f"READY {server.base_url}", flush=True)
        sys.stdin.read()


def start(kind: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"the {kind} fake did not start: {line!r}")
    return proc, line.removeprefix("READY ")


def stop(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


async def rate(client: Any, requests: list[list[dict[str, Any]]]) -> float:
    queue = iter(requests)

    async def worker() -> None:
        for messages in queue:
            await client.complete(messages, RESPONSE_FORMAT)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - started
    await client.aclose()
    return len(requests) / elapsed


def openai_client(url: str) -> OpenAIExecutor:
    judge = "openai-api/fake/fake-judge"
    settings = JudgeSettings(judge=judge, concurrency=CONCURRENCY)
    return OpenAIExecutor(resolve_endpoint(judge, base_url=url, api_key=KEY), settings)


def anthropic_client(url: str) -> AnthropicExecutor:
    judge = "anthropic/fake-judge"
    settings = JudgeSettings(judge=judge, concurrency=CONCURRENCY)
    return AnthropicExecutor(resolve_endpoint(judge, base_url=url, api_key=KEY), settings)


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
        return
    n = 4_000 if "--quick" in sys.argv else 12_000
    with tempfile.TemporaryDirectory() as tmp:
        dataset, responses = write_data(Path(tmp), questions=n // 240 + 1, models=8)
        requests = requests_for(dataset, responses, n)
    openai_proc, openai_url = start("openai")
    anthropic_proc, anthropic_url = start("anthropic")
    try:
        asyncio.run(rate(openai_client(openai_url), requests[:1000]))  # warm up
        asyncio.run(rate(anthropic_client(anthropic_url), requests[:1000]))
        best_openai = best_anthropic = 0.0
        for _ in range(3):
            best_openai = max(best_openai, asyncio.run(rate(openai_client(openai_url), requests)))
            best_anthropic = max(
                best_anthropic, asyncio.run(rate(anthropic_client(anthropic_url), requests))
            )
    finally:
        stop(openai_proc)
        stop(anthropic_proc)
    print(f"zero-latency fakes, concurrency {CONCURRENCY}, {len(requests):,} requests, best of 3")
    print(f"  openai-compatible (OpenAIExecutor)  {best_openai:8.0f} checks/s")
    print(f"  anthropic (AnthropicExecutor)       {best_anthropic:8.0f} checks/s")
    ratio = best_anthropic / best_openai
    print(
        verdict_line("anthropic / openai-compatible", ratio, 0.8, unit="x", higher_is_better=True)
    )


if __name__ == "__main__":
    main()
