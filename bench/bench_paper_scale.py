"""The commands around the judge at the scale the method is for, as a user runs them.

Builds a paper-scale synthetic run folder once (1,813 questions, 14 models, 2 settings,
30 checks: 1.52 million verdict rows for one judge, each with a judge's explanation of
about 600 characters, as real judges write; verdicts.jsonl about 1.2 GB), then times
whole commands, each in a fresh process, side by side with the baseline:

    baseline       a full-column pyarrow.json read of the run's verdicts.jsonl
    gamut score    gamut score --dataset RUN/dataset.jsonl --verdicts RUN/verdicts.jsonl
    run scoring    gamut run's scoring step on the finished run (score_run_folder)
    report json    gamut report RUN --format json -o RUN/report.json
    report html    gamut report RUN --format html -o RUN/report.html (with the drill-down)

For each: wall time (median of --repeat runs), peak memory (the process's max RSS) and
bytes read (``rchar`` of /proc/self/io: every byte read, from disk or the page cache).
Targets: gamut score and the report's tables within 2x of the baseline's time; peak memory
under 1.5 GB for gamut score and under 3 GB for the HTML report; bytes read at most 1.2x
the size of verdicts.jsonl.

Usage: python bench/bench_paper_scale.py [--workdir DIR] [--repeat N] [--quick]
(--workdir keeps and reuses the generated run; --quick: 200 questions.)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import peak_rss_mb

MODELS = [f"provider-{i}/model-{i}" for i in range(14)]
JUDGE = "openai/gpt-4.1-mini"
REASONING_CHARS = 440
GB = 1024**3


def _child(argv: list[str]) -> None:
    """In the fresh process: run one command, then print what it cost as JSON."""
    out_file = Path(argv[0])
    what, args = argv[1], argv[2:]
    try:
        if what == "baseline":
            import pyarrow.json as pj  # type: ignore[import-untyped]

            table = pj.read_json(args[0])
            assert table.num_rows > 0
        elif what == "run-scoring":
            from gamut_eval import load_dataset
            from gamut_eval.run import score_run_folder
            from gamut_eval.scoring import ScoringParams

            folder = Path(args[0])
            score_run_folder(load_dataset(folder / "dataset.jsonl"), folder, ScoringParams())
        else:
            from gamut_eval.cli import main

            try:
                main(args)
            except SystemExit as exc:
                if exc.code:
                    raise
    finally:
        io = dict(
            line.split(": ") for line in Path("/proc/self/io").read_text().splitlines() if line
        )
        peak = int(peak_rss_mb() * 1024 * 1024)  # VmHWM: ru_maxrss would carry the parent's
        out_file.write_text(json.dumps({"rchar": int(io["rchar"]), "peak": peak}))


def _measure(what: str, args: list[str], repeat: int) -> dict[str, float]:
    times, peaks, reads = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "cost.json"
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, __file__, "--child", str(result), what, *args],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - start)
            cost = json.loads(result.read_text())
            peaks.append(cost["peak"])
            reads.append(cost["rchar"])
    return {"time": statistics.median(times), "peak": max(peaks), "read": max(reads)}


def _generate(folder: Path, questions: int) -> None:
    if (folder / "run.json").is_file():
        return
    from gamut_eval.testing import synthetic_run

    print(f"generating the run folder in {folder} ...", flush=True)
    synthetic_run(
        folder,
        models=MODELS,
        judges=[JUDGE],
        questions=questions,
        checks=30,
        reasoning_chars=REASONING_CHARS,
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, help="keep (and reuse) the generated run here")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (median)")
    parser.add_argument("--quick", action="store_true", help="200 questions instead of 1,813")
    args = parser.parse_args()
    scratch = None
    folder = args.workdir
    if folder is None:
        scratch = Path(tempfile.mkdtemp(prefix="gamut-paper-scale-"))
        folder = scratch / "run"
    try:
        _generate(folder, 200 if args.quick else 1813)
        verdicts = folder / "verdicts.jsonl"
        size = verdicts.stat().st_size
        rows = sum(1 for _ in verdicts.open("rb"))
        commands = {
            "baseline (pyarrow.json, all columns)": ("baseline", [str(verdicts)]),
            "gamut score": (
                "cli",
                ["score", "--dataset", str(folder / "dataset.jsonl"), "--verdicts", str(verdicts)],
            ),
            "gamut run: scoring step": ("run-scoring", [str(folder)]),
            "gamut report --format json": (
                "cli",
                ["report", str(folder), "--format", "json", "-o", str(folder / "report.json")],
            ),
            "gamut report --format html": (
                "cli",
                ["report", str(folder), "--format", "html", "-o", str(folder / "report.html")],
            ),
        }
        print(
            f"paper-scale run: {rows:,} verdict rows, verdicts.jsonl {size / GB:.2f} GB, "
            f"{args.repeat} run(s) each, fresh process per run"
        )
        print()
        print("| command | wall s (median) | x baseline | peak memory GB | bytes read / file |")
        print("|---|---:|---:|---:|---:|")
        results = {}
        for name, (what, cmd) in commands.items():
            cost = _measure(what, cmd, args.repeat)
            results[name] = cost
            base = results["baseline (pyarrow.json, all columns)"]["time"]
            print(
                f"| {name} | {cost['time']:.2f} | {cost['time'] / base:.2f} | "
                f"{cost['peak'] / GB:.2f} | {cost['read'] / size:.2f} |",
                flush=True,
            )
        base = results["baseline (pyarrow.json, all columns)"]["time"]
        print()
        checks = [
            ("gamut score time x baseline", results["gamut score"]["time"] / base, 2.0),
            (
                "report json time x baseline",
                results["gamut report --format json"]["time"] / base,
                2.0,
            ),
            ("gamut score peak GB", results["gamut score"]["peak"] / GB, 1.5),
            ("report html peak GB", results["gamut report --format html"]["peak"] / GB, 3.0),
        ]
        checks += [(f"{n}: bytes read / file", c["read"] / size, 1.2) for n, c in results.items()]
        for label, value, target in checks:
            status = "PASS" if value <= target else "FAIL"
            print(f"{label}: {value:.2f} (target <= {target}) {status}")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
