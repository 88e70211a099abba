"""Performance of the scale-out judge backends, measured side by side in one run.

Prints:
1. the ray backend on a local Ray instance (2 CPUs; 1 and 2 actors) vs the fast executor, both
   judging the same requests end to end (plan, render, call, parse, store) against one
   loopback fake server in another process; target: the ray backend within 3x of the
   fast executor (the price of distribution on one machine). Ray's start-up (ray.init)
   is reported apart; the actors' start-up is inside the ray timing.
2. the batch backend's file path: 1,000,000 requests written as Batch API JSONL (split at
   OpenAI's limits) from a dataset and responses file; target: under 60 s.
Usage: python bench/bench_scale.py [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import verdict_line
from bench_judge import write_data
from gamut_eval import load_dataset
from gamut_eval.judge import (
    BackendOptions,
    BatchBackend,
    BatchSettings,
    JudgePlan,
    JudgeSettings,
    RaySettings,
    VerdictStore,
    judge_pass,
    make_backend,
)
from gamut_eval.testing import start_fake_server_process, stop_fake_server_process

JUDGE = "openai-api/fake/fake-judge"


def timed_pass(
    dataset: Path, responses: Path, store: Path, settings: JudgeSettings, **options: object
) -> tuple[float, int]:
    """A whole judge pass on the backend ``settings`` names; (checks/s, checks judged)."""
    plan = JudgePlan(load_dataset(dataset), responses, settings)
    backend = make_backend(settings, BackendOptions(**options))  # type: ignore[arg-type]
    start = time.perf_counter()
    with VerdictStore(store) as verdicts:
        stats = judge_pass(plan, backend, verdicts)
    return stats.judged / (time.perf_counter() - start), stats.judged


def fast_pass(dataset: Path, responses: Path, store: Path) -> tuple[float, int]:
    return timed_pass(dataset, responses, store, JudgeSettings(judge=JUDGE, concurrency=64))


def ray_pass(dataset: Path, responses: Path, store: Path, actors: int) -> tuple[float, int]:
    ray_settings = RaySettings(
        workers=actors, worker_concurrency=128 // actors, responses_per_batch=32
    )
    settings = JudgeSettings(judge=JUDGE, backend="ray")
    return timed_pass(dataset, responses, store, settings, ray=ray_settings)


def same_verdicts(a: Path, b: Path) -> bool:
    import sqlite3

    rows = []
    for path in (a, b):
        with sqlite3.connect(path) as db:
            rows.append(dict(db.execute("SELECT key, verdict FROM verdicts").fetchall()))
        db.close()
    return rows[0] == rows[1]


def ray_vs_fast(folder: Path, n: int) -> None:
    import ray

    dataset, responses = write_data(folder, questions=n // 240 + 1, models=8)
    proc, base_url = start_fake_server_process(latency_ms=0)
    os.environ["FAKE_BASE_URL"] = base_url
    try:
        fast_pass(dataset, responses, folder / "warm.sqlite")  # warm the server process up
        alone = [fast_pass(dataset, responses, folder / f"f{i}.sqlite") for i in range(2)]
        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray_start = time.perf_counter() - started
        one, two, beside = [], [], []
        for i in range(2):  # alternate, keep the best of each: the machine is shared
            one.append(ray_pass(dataset, responses, folder / f"r{i}.sqlite", actors=1))
            two.append(ray_pass(dataset, responses, folder / f"s{i}.sqlite", actors=2))
            beside.append(fast_pass(dataset, responses, folder / f"g{i}.sqlite"))
        ray.shutdown()
    finally:
        stop_fake_server_process(proc)
    judged = alone[0][1]
    runs = alone + one + two + beside
    assert {n for _, n in runs} == {judged}, "every pass judges every check"
    fast_alone, fast_beside = max(r for r, _ in alone), max(r for r, _ in beside)
    ray_one, ray_two = max(r for r, _ in one), max(r for r, _ in two)
    fast, rate = max(fast_alone, fast_beside), max(ray_one, ray_two)
    same = same_verdicts(folder / "f1.sqlite", folder / "r1.sqlite") and same_verdicts(
        folder / "f1.sqlite", folder / "s1.sqlite"
    )
    print(f"zero-latency fake server (its own process), {judged:,} checks, 2 CPUs")
    print(f"  fast executor, concurrency 64, no Ray running   {fast_alone:8.0f} checks/s")
    print(f"  fast executor, concurrency 64, Ray idle beside  {fast_beside:8.0f} checks/s")
    print(f"  ray backend, 1 actor x concurrency 128          {ray_one:8.0f} checks/s")
    print(f"  ray backend, 2 actors x concurrency 64          {ray_two:8.0f} checks/s")
    print(
        f"  (ray.init {ray_start:.1f} s not included; actor start-up included; "
        "the fake server takes one of the two cores)"
    )
    print(f"  same verdicts in the fast and ray stores: {same}")
    print(verdict_line("best fast / best ray throughput", fast / rate, 3.0, unit="x"))


def batch_write(folder: Path, n: int) -> None:
    os.environ.setdefault("FAKE_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    dataset, responses = write_data(folder, questions=n // 240 + 1, models=8, seed=3)
    settings = JudgeSettings(judge=JUDGE, backend="batch")
    # the rubrics are compiled outside the timing (a run loads them once)
    plan = JudgePlan(load_dataset(dataset), responses, settings)
    options = BackendOptions(
        batch=BatchSettings(directory=folder / "batches"), batch_write_only=True
    )
    backend = make_backend(settings, options)
    assert isinstance(backend, BatchBackend)
    start = time.perf_counter()
    with VerdictStore(folder / "s.sqlite") as verdicts:
        judge_pass(plan, backend, verdicts)
    elapsed = time.perf_counter() - start
    assert backend.written is not None
    report = backend.written
    size = sum(f.bytes for f in report.files)
    print(
        f"batch files: {report.requests:,} requests in {len(report.files)} files "
        f"({size / 1e9:.2f} GB, at most {max(f.requests for f in report.files):,} requests and "
        f"{max(f.bytes for f in report.files) / 1e6:.0f} MB each) in {elapsed:.1f} s = "
        f"{report.requests / elapsed:,.0f} requests/s"
    )
    per_million = elapsed * 1_000_000 / report.requests
    print(verdict_line("time to write 1,000,000 requests", per_million, 60, unit="s"))
    print(f"  headroom: budget / measured = {60 / per_million:.1f}x")


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)  # Ray Data's own DataContext warnings
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        ray_vs_fast(Path(tmp), 6_000 if quick else 20_000)
    with tempfile.TemporaryDirectory() as tmp:
        batch_write(Path(tmp), 200_000 if quick else 1_000_000)


if __name__ == "__main__":
    main()
