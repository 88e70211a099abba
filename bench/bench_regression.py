"""This tree against an earlier commit, side by side: nothing may get more than 5% slower.

    python bench/bench_regression.py --against REV [--rounds N]

REV is checked out into a temporary git worktree; each measurement runs in fresh
processes, alternating between the two trees, and the median of N rounds is compared
(the machine is shared, so only ratios measured in one run mean anything):

- scoring: 2.3 million verdict rows into per-response and per-model scores
  (``score_table`` + ``summarise_scores``), as in ``bench_core.py``;
- compile: 1,813 paper-sized rubrics;
- demo: ``gamut demo`` end to end (the offline judge over the bundled sample, scores,
  the HTML report), as a user runs it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 1.05

_SCORING = """
import random, sys, time
sys.path.insert(0, {bench!r})
import pandas as pd
from _common import paper_rubric
from gamut_eval import compile_rubric, score_table, summarise_scores
rng = random.Random(0)
checklists = {{c.rubric_id: c for c in (compile_rubric(paper_rubric(i, rng)) for i in range(1813))}}
frame = pd.read_parquet({table!r})
start = time.perf_counter()
summarise_scores(score_table(frame, checklists))
print(time.perf_counter() - start)
"""

_COMPILE = """
import gc, random, sys, time
sys.path.insert(0, {bench!r})
from _common import paper_rubric
from gamut_eval import compile_rubric
rng = random.Random(0)
rubrics = [paper_rubric(i, rng) for i in range(1813)]
gc.collect()
start = time.perf_counter()
[compile_rubric(m) for m in rubrics]
print(time.perf_counter() - start)
"""


def _python(tree: Path, code: str) -> float:
    env = {"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout.strip().splitlines()[-1])


def _demo(tree: Path) -> float:
    env = {"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": "120"}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gamut_eval", "demo", "--out", f"{tmp}/demo"],
            capture_output=True,
            check=True,
            env=env,
        )
        return time.perf_counter() - start


def _verdict_table(path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    sys.path.insert(0, str(ROOT / "src"))
    import random

    from _common import paper_rubric
    from bench_core import QUESTIONS, build_verdicts
    from gamut_eval import compile_rubric

    rng = random.Random(0)
    checklists = {
        c.rubric_id: c for c in (compile_rubric(paper_rubric(i, rng)) for i in range(QUESTIONS))
    }
    build_verdicts(checklists).astype("category").to_parquet(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.against is None:
        print("regression: skipped (give --against REV to compare this tree with a commit)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.against],
            check=True,
        )
        try:
            table = Path(tmp) / "verdicts.parquet"
            _verdict_table(table)
            bench = str(ROOT / "bench")  # the same rubric generator for both trees
            cases = {
                "scoring 2.3M rows": lambda t: _python(
                    t, _SCORING.format(bench=bench, table=str(table))
                ),
                "compile 1,813 rubrics": lambda t: _python(t, _COMPILE.format(bench=bench)),
                "gamut demo": _demo,
            }
            print(f"this tree ({ROOT}) against {args.against}, median of {args.rounds} rounds")
            for name, measure in cases.items():
                times: dict[str, list[float]] = {"base": [], "this": []}
                for _ in range(args.rounds):
                    times["base"].append(measure(base))
                    times["this"].append(measure(ROOT))
                old, new = statistics.median(times["base"]), statistics.median(times["this"])
                verdict = "PASS" if new / old <= BUDGET else "FAIL"
                print(
                    f"{name}: {args.against} {old:.3f} s, this tree {new:.3f} s; "
                    f"this / {args.against}: {new / old:.3f} x (target <= {BUDGET} x) {verdict}"
                )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False
            )


if __name__ == "__main__":
    main()
