"""Shared helpers for the benchmark scripts: synthetic paper-sized data and timing."""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gamut_eval import MetaRubric, validate_meta_rubric

T = TypeVar("T")


def paper_rubric(i: int, rng: random.Random) -> MetaRubric:
    """A meta-rubric shaped like the paper's: about 30 checks over every item type."""
    n_long = rng.randint(8, 12)
    data: dict[str, Any] = {
        "id": f"q-{i:05d}",
        "question": f"What is this object number {i}, where does it come from and how is it made?",
        "entity": f"Entity {i}",
        "evidence": [
            {"id": f"s{j}", "text": f"Snippet {j} about entity {i}."} for j in range(1, 9)
        ],
        "items": [
            {
                "id": "identity",
                "type": "fact",
                "tier": "answer_critical",
                "statement": f"Identifies entity {i}.",
                "cites": ["s1"],
            },
            {
                "id": "origin",
                "type": "fact",
                "tier": "valuable",
                "statement": "States where it comes from.",
                "cites": ["s2"],
            },
            {
                "id": "era",
                "type": "fact",
                "tier": "context",
                "statement": "States when it first appeared.",
            },
            {
                "id": "maker",
                "type": "fact",
                "tier": "valuable",
                "statement": "Names who first made it.",
            },
            {
                "id": "core",
                "type": "strict_list",
                "tier": "answer_critical",
                "name": "core parts",
                "items": [f"part {k}" for k in range(3)],
                "cites": ["s3"],
            },
            {
                "id": "uses",
                "type": "flexible_list",
                "tier": "answer_critical",
                "name": "common uses",
                "options": [{"text": f"use {k}", "cites": [f"s{1 + k % 8}"]} for k in range(7)],
                "min_required": 2,
                "meta_insights": [{"statement": "Notes the common thread of its uses."}],
            },
            {
                "id": "varieties",
                "type": "flexible_list",
                "tier": "valuable",
                "name": "varieties",
                "options": [f"variety {k}" for k in range(n_long)],
                "min_required": 2,
            },
            {
                "id": "making",
                "type": "process",
                "tier": "valuable",
                "name": "how it is made",
                "steps": [{"text": f"step {k}", "required": k != 2} for k in range(4)],
            },
            {
                "id": "rival",
                "type": "relationship",
                "tier": "context",
                "entity": "a rival object",
                "relation": "a close alternative",
                "aspects": ["is cheaper", "is older", "is rarer"],
            },
            {
                "id": "trend",
                "type": "meta_insight",
                "tier": "context",
                "statement": "Explains the trend.",
                "about": "uses",
            },
        ],
    }
    return validate_meta_rubric(data)


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[T, float]:
    """Result of ``fn`` and the best wall time over ``repeat`` runs."""
    best = float("inf")
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def peak_rss_mb() -> float:
    """Peak resident memory of this process image so far, in MB.

    Read from /proc (VmHWM), not getrusage: ru_maxrss survives exec, so a child started
    from a large parent would report the parent's size.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def verdict_line(
    name: str, measured: float, budget: float, unit: str = "s", higher_is_better: bool = False
) -> str:
    ok = measured >= budget if higher_is_better else measured <= budget
    relation = ">=" if higher_is_better else "<="
    status = "PASS" if ok else "FAIL"
    return f"{name}: {measured:.3f} {unit} (target {relation} {budget} {unit}) {status}"


def run_in_child(
    script: str,
    description: str,
    prefix: str,
    generate: Callable[[Path], None],
    child: Callable[[Path], None],
    then: Callable[[Path], T] | None = None,
) -> tuple[dict[str, Any], T | None]:
    """The body of a bench script that generates a run, then measures it in a fresh
    process (``script --child RUN_DIR`` calls ``child``, whose last stdout line is JSON).
    Returns that JSON and what ``then`` measured on the run folder before it is removed;
    ``--workdir`` keeps (and reuses) the generated run. In the child, exits after ``child``."""
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]))
        raise SystemExit(0)
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workdir", type=Path, help="keep (and reuse) the generated run here")
    args = parser.parse_args()
    scratch = None
    run_dir = args.workdir
    if run_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix=prefix))
        run_dir = scratch / "run"
    try:
        generate(run_dir)
        out = subprocess.run(
            [sys.executable, script, "--child", str(run_dir)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        result = json.loads(out.strip().splitlines()[-1])
        extra = then(run_dir) if then is not None else None
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return result, extra
