"""This tree against an earlier commit, side by side: nothing may get more than 5% slower.

    python bench/bench_regression.py --against REV [--rounds N] [--demo-budget X]

REV is checked out into a temporary git worktree; each measurement runs in fresh
processes, alternating between the two trees, and the median of N rounds is compared
(the machine is shared, so only ratios measured in one run mean anything):

- scoring: 2.3 million verdict rows into per-response and per-model scores
  (``score_table`` + ``summarise_scores``), as in ``bench_core.py``;
- compile: 1,813 paper-sized rubrics;
- demo: ``gamut demo`` end to end into a new folder (both judges over the bundled
  sample, scores, Inspect logs, the HTML report), as a user runs it;
- demo rerun: ``gamut demo`` again into the folder of a finished demo (nothing to judge),
  which must also take less than this tree's first run.

``--demo-budget`` sets the target of both demo lines (1.5 against a commit whose demo did
less work, e.g. f996594's: one judge, no Inspect logs, no question diversity).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def _demo(tree: Path, rerun: bool = False) -> float:
    """Wall time of ``gamut demo`` into a new folder, or (``rerun``) into the folder of a
    demo that finished."""
    env = {"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": "120"}
    command = [sys.executable, "-m", "gamut_eval", "demo", "--out"]
    with tempfile.TemporaryDirectory() as tmp:
        if rerun:
            subprocess.run([*command, f"{tmp}/demo"], capture_output=True, check=True, env=env)
        start = time.perf_counter()
        subprocess.run([*command, f"{tmp}/demo"], capture_output=True, check=True, env=env)
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
    parser.add_argument(
        "--demo-budget",
        type=float,
        default=BUDGET,
        help="target for the demo and its rerun, this tree / REV (default: %(default)s)",
    )
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
            cases: dict[str, tuple[Callable[[Path], float], float]] = {
                "scoring 2.3M rows": (
                    lambda t: _python(t, _SCORING.format(bench=bench, table=str(table))),
                    BUDGET,
                ),
                "compile 1,813 rubrics": (
                    lambda t: _python(t, _COMPILE.format(bench=bench)),
                    BUDGET,
                ),
                "gamut demo": (_demo, args.demo_budget),
                "gamut demo rerun": (lambda t: _demo(t, rerun=True), args.demo_budget),
            }
            print(f"this tree ({ROOT}) against {args.against}, median of {args.rounds} rounds")
            medians: dict[str, float] = {}
            for name, (measure, budget) in cases.items():
                times: dict[str, list[float]] = {"base": [], "this": []}
                for _ in range(args.rounds):
                    times["base"].append(measure(base))
                    times["this"].append(measure(ROOT))
                old, new = statistics.median(times["base"]), statistics.median(times["this"])
                medians[name] = new
                verdict = "PASS" if new / old <= budget else "FAIL"
                print(
                    f"{name}: {args.against} {old:.3f} s, this tree {new:.3f} s; "
                    f"this / {args.against}: {new / old:.3f} x (target <= {budget} x) {verdict}"
                )
            first, again = medians["gamut demo"], medians["gamut demo rerun"]
            verdict = "PASS" if again < first else "FAIL"
            print(
                f"gamut demo rerun / first run, this tree: {again:.3f} s / {first:.3f} s = "
                f"{again / first:.3f} x (target < 1 x) {verdict}"
            )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False
            )


if __name__ == "__main__":
    main()
