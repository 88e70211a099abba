"""Performance of the judge engine against a loopback fake server in another process.

Prints, measured side by side in one run:
1. throughput of the fast executor vs a bare aiohttp loop sending the same requests
   (target >= 0.7x), and vs the same requests through Inspect's get_model().generate()
   (target >= 10x); the full engine (render, parse, store) is reported too;
2. the whole engine at 100 ms server latency and 64 requests in flight (target >= 576
   checks/s), and beside it the default settings, whose adaptive limit starts a loopback
   server at 2 in flight and finds its pace;
3. the share of prompt tokens in the per-response shared prefix for a 600-token response
   and 30 checks (target >= 85%; tokens estimated as characters / 4 for both parts);
4. peak memory of a 200,000-check run vs a 50,000-check run, each in a fresh process
   (target: within 25% and under 1.5 GB).
Usage: python bench/bench_judge.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).parent))
from _common import paper_rubric, peak_rss_mb, verdict_line
from gamut_eval import compile_rubric, load_dataset
from gamut_eval.judge import (
    RESPONSE_FORMAT,
    JudgePlan,
    JudgeSettings,
    OpenAIExecutor,
    VerdictStore,
    make_backend,
    render_messages,
    render_response,
    resolve_endpoint,
    run_pass,
)
from gamut_eval.testing import start_fake_server_process, stop_fake_server_process

JUDGE = "openai-api/fake/fake-judge"
WORDS = [
    "the",
    "a",
    "plant",
    "leaf",
    "grows",
    "tropical",
    "forest",
    "red",
    "panda",
    "dish",
    "rice",
    "tower",
    "iron",
    "built",
]


def response_text(rng: random.Random, tokens: int = 600) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(int(tokens * 0.75)))


def write_data(folder: Path, questions: int, models: int, seed: int = 0) -> tuple[Path, Path]:
    """A dataset of paper-sized rubrics (~30 checks) and ~600-token responses."""
    rng = random.Random(seed)
    dataset = folder / "dataset.jsonl"
    responses = folder / "responses.jsonl"
    with dataset.open("w") as d, responses.open("w") as r:
        for i in range(questions):
            meta = paper_rubric(i, rng)
            record = {
                "id": meta.id,
                "question": meta.question,
                "meta_rubric": meta.model_dump(mode="json"),
            }
            d.write(json.dumps(record) + "\n")
            for m in range(models):
                row = {
                    "question_id": meta.id,
                    "model": f"m/{m}",
                    "setting": "multimodal",
                    "response": response_text(rng),
                }
                r.write(json.dumps(row) + "\n")
    return dataset, responses


def requests_for(dataset: Path, responses: Path, limit: int) -> list[list[dict[str, Any]]]:
    """The rendered message lists the engine would send, for the raw-client comparisons."""
    data = load_dataset(dataset)
    settings = JudgeSettings(judge=JUDGE)
    out: list[list[dict[str, Any]]] = []
    for plan in JudgePlan(data, responses, settings):
        rendered = render_response(plan.question, plan.row.response)
        out += [render_messages(rendered, c.text) for c in plan.checks]
        if len(out) >= limit:
            break
    return out[:limit]


async def bare_loop(base_url: str, requests: list[list[dict[str, Any]]], concurrency: int) -> float:
    """The floor: one session, N workers, post and read the JSON. Returns calls/s."""
    bodies = [
        json.dumps(
            {"model": "fake-judge", "messages": m, "response_format": RESPONSE_FORMAT}
        ).encode()
        for m in requests
    ]
    url = base_url + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    queue = iter(bodies)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def worker() -> None:
            for body in queue:
                async with session.post(url, data=body, headers=headers) as reply:
                    await reply.json()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return len(bodies) / (time.perf_counter() - start)


async def fast_executor(
    base_url: str, requests: list[list[dict[str, Any]]], concurrency: int
) -> float:
    os.environ["FAKE_BASE_URL"] = base_url
    executor = OpenAIExecutor(
        resolve_endpoint(JUDGE), JudgeSettings(judge=JUDGE, concurrency=concurrency)
    )
    queue = iter(requests)

    async def worker() -> None:
        for messages in queue:
            await executor.complete(messages, RESPONSE_FORMAT)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    rate = len(requests) / (time.perf_counter() - start)
    await executor.aclose()
    return rate


async def inspect_generate(
    base_url: str, requests: list[list[dict[str, Any]]], concurrency: int
) -> float:
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model

    os.environ["FAKE_BASE_URL"] = base_url
    os.environ.setdefault("FAKE_API_KEY", "unused")
    model = get_model(
        JUDGE, config=GenerateConfig(max_connections=concurrency, temperature=0.0, max_tokens=400)
    )
    queue = iter(requests)

    async def worker() -> None:
        for messages in queue:
            chat = [
                ChatMessageSystem(content=messages[0]["content"]),
                ChatMessageUser(content=messages[1]["content"]),
            ]
            await model.generate(chat)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(requests) / (time.perf_counter() - start)


async def engine(
    base_url: str,
    dataset: Path,
    responses: Path,
    store: Path,
    concurrency: int,
    adaptive: bool = False,
) -> tuple[float, int]:
    """The whole engine with ``concurrency`` requests in flight (``adaptive``: as the
    default settings send them, the limit finding the loopback server's pace)."""
    os.environ["FAKE_BASE_URL"] = base_url
    settings = JudgeSettings(judge=JUDGE, concurrency=concurrency, adaptive_concurrency=adaptive)
    plan = JudgePlan(load_dataset(dataset), responses, settings)
    with VerdictStore(store) as verdicts:
        start = time.perf_counter()
        stats = await run_pass(plan, make_backend(settings), verdicts)
        elapsed = time.perf_counter() - start
    return stats.judged / elapsed, stats.judged


def prefix_share() -> float:
    rng = random.Random(1)
    checklist = compile_rubric(paper_rubric(0, rng))
    response = response_text(rng, 600)
    rendered = render_response(
        "What is this object, where does it come from and how is it made?", response
    )
    total = prefix = 0
    for check in checklist.checks[:30]:
        content = render_messages(rendered, check.text)
        text = content[0]["content"] + content[1]["content"]
        shared = text.index("# Check\n")
        total += len(text)
        prefix += shared
    return prefix / total


def memory_child(folder: str, base_url: str) -> None:
    """A fresh process that only loads the data and judges it: its peak RSS is the run's."""
    dataset, responses = Path(folder) / "dataset.jsonl", Path(folder) / "responses.jsonl"
    before = peak_rss_mb()
    rate, judged = asyncio.run(engine(base_url, dataset, responses, Path(folder) / "s.sqlite", 64))
    print(
        json.dumps({"peak_mb": peak_rss_mb(), "before_mb": before, "judged": judged, "rate": rate})
    )


def run_memory(checks: int, base_url: str) -> dict[str, float]:
    """A run of ``checks`` checks over a fixed dataset (more answers, not more questions), so
    the difference between two sizes is what the run itself keeps, not the dataset."""
    questions = 167  # x 30 checks: 50,000 checks at 10 answers per question
    with tempfile.TemporaryDirectory() as tmp:
        write_data(Path(tmp), questions=questions, models=max(1, round(checks / (30 * questions))))
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", tmp, base_url],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--memory-child"]:
        memory_child(sys.argv[2], sys.argv[3])
        return
    quick = "--quick" in sys.argv
    n = 6_000 if quick else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        dataset, responses = write_data(folder, questions=n // 240 + 1, models=8)
        requests = requests_for(dataset, responses, n)
        proc, base_url = start_fake_server_process(latency_ms=0)
        try:
            asyncio.run(bare_loop(base_url, requests[:2000], 64))  # warm both processes up
            bare = fast = 0.0
            for _ in range(2):  # alternate, keep the best of each: the machine is shared
                bare = max(bare, asyncio.run(bare_loop(base_url, requests, 64)))
                fast = max(fast, asyncio.run(fast_executor(base_url, requests, 64)))
            full, _ = asyncio.run(engine(base_url, dataset, responses, folder / "a.sqlite", 64))
            inspect_rate = asyncio.run(inspect_generate(base_url, requests[:600], 64))
        finally:
            stop_fake_server_process(proc)
        print(
            f"zero-latency server, concurrency 64, {len(requests):,} requests of ~{len(json.dumps(requests[0])):,} bytes"
        )
        print(f"  bare aiohttp loop     {bare:8.0f} calls/s")
        print(f"  fast executor         {fast:8.0f} calls/s")
        print(f"  full engine (fast)    {full:8.0f} checks/s  (render + executor + parse + store)")
        print(f"  inspect generate()    {inspect_rate:8.0f} calls/s  (600 requests)")
        print(
            verdict_line(
                "fast executor / bare aiohttp", fast / bare, 0.7, unit="x", higher_is_better=True
            )
        )
        print(
            verdict_line(
                "full engine / bare aiohttp", full / bare, 0.7, unit="x", higher_is_better=True
            )
        )
        print(
            verdict_line(
                "fast executor / inspect", fast / inspect_rate, 10, unit="x", higher_is_better=True
            )
        )

        dataset2, responses2 = write_data(folder, questions=12 if quick else 40, models=8, seed=2)
        # A fixed-reply server: its own CPU per request would otherwise count as latency.
        proc, base_url = start_fake_server_process(latency_ms=100, policy="fixed")
        try:
            requests2 = requests_for(dataset2, responses2, 10**9)
            bare100 = asyncio.run(bare_loop(base_url, requests2, 64))
            rate, judged = asyncio.run(
                engine(base_url, dataset2, responses2, folder / "b.sqlite", 64)
            )
            default, _ = asyncio.run(
                engine(base_url, dataset2, responses2, folder / "c.sqlite", 64, adaptive=True)
            )
        finally:
            stop_fake_server_process(proc)
        print(
            f"100 ms server latency, concurrency 64: {judged:,} checks; bare aiohttp loop {bare100:.0f} calls/s"
        )
        print(
            f"  the default settings (adaptive limit from 2 in flight; a loopback server is "
            f"self-hosted to it): {default:.0f} checks/s, {default / rate:.2f}x of 64 in flight"
        )
        print(verdict_line("engine throughput", rate, 576, unit="checks/s", higher_is_better=True))

    print(
        verdict_line(
            "shared-prefix share of prompt tokens (600-token response, 30 checks)",
            100 * prefix_share(),
            85,
            unit="%",
            higher_is_better=True,
        )
    )

    small, large = (12_000, 48_000) if quick else (50_000, 200_000)
    proc, base_url = start_fake_server_process(latency_ms=0, policy="fixed")
    try:
        a = run_memory(small, base_url)
        b = run_memory(large, base_url)
    finally:
        stop_fake_server_process(proc)
    for r in (a, b):
        print(
            f"memory: {r['judged']:,} checks judged: peak RSS {r['peak_mb']:.0f} MB "
            f"(after imports {r['before_mb']:.0f} MB), {r['rate']:.0f} checks/s"
        )
    growth = 100 * (b["peak_mb"] / a["peak_mb"] - 1)
    print(verdict_line(f"peak memory growth {small:,} -> {large:,} checks", growth, 25, unit="%"))
    print(verdict_line("peak memory of the larger run", b["peak_mb"], 1536, unit="MB"))


if __name__ == "__main__":
    main()
