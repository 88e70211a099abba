"""Performance of the reports: the full report at paper scale.

A synthetic run folder shaped like the paper's (14 models x 1,813 questions x 3 judges x 2
settings x 30 checks: 4,568,760 verdict rows, about 1 GB of verdicts.jsonl) is generated
once, then a fresh child process builds the whole report from it, as `gamut report` does:
read scores.jsonl, verdicts.jsonl, run.json and the dataset; every table with 1,000
bootstrap resamples (per-check agreement over all verdict rows included, and question
diversity); render the self-contained HTML page and write it.

Targets: under 60 s, peak memory (VmHWM of the child) under 4 GB.
Usage: python bench/bench_report.py [--workdir DIR]   (DIR keeps the generated run for reuse)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import peak_rss_mb, run_in_child, verdict_line
from gamut_eval.analysis import ReportConfig, build_report, load_run_data, render_html
from gamut_eval.testing import synthetic_run

QUESTIONS, MODELS, JUDGES, CHECKS = 1813, 14, 3, 30
RESAMPLES = 1000
SHAPE = {"questions": QUESTIONS, "models": MODELS, "judges": JUDGES, "checks": CHECKS}


def child(run_dir: Path) -> None:
    """Runs in a fresh process: the report end to end; prints timings and peak memory."""
    start = time.perf_counter()
    run = load_run_data(run_dir)
    loaded = time.perf_counter()
    report = build_report(run, ReportConfig(resamples=RESAMPLES))
    built = time.perf_counter()
    html = render_html(report, run)
    (run_dir / "report.html").write_text(html, encoding="utf-8")
    done = time.perf_counter()
    print(json.dumps({
        "load": loaded - start, "build": built - loaded, "html": done - built,
        "total": done - start, "peak_mb": peak_rss_mb(), "html_bytes": len(html.encode()),
        "verdict_rows": 0 if run.verdicts is None else len(run.verdicts),
        "responses": report.meta.responses, "tables": {
            name: len(report.table(name)) for name in ("leaderboard", "breakdowns",
            "judge_pairs", "check_agreement", "modality", "diversity_templates")},
    }))  # fmt: skip


def generate(run_dir: Path) -> None:
    marker = run_dir / "bench-shape.json"
    if marker.is_file() and json.loads(marker.read_text()) == SHAPE:
        print(f"reusing the synthetic run in {run_dir}")
        return
    start = time.perf_counter()
    synthetic_run(
        run_dir,
        models=[f"provider-{m % 5}/model-{m}" for m in range(MODELS)],
        judges=[f"provider-{j}/judge" for j in range(JUDGES)],
        questions=QUESTIONS,
        checks=CHECKS,
    )
    marker.write_text(json.dumps(SHAPE))
    size = (run_dir / "verdicts.jsonl").stat().st_size / 1e9
    print(f"generated the synthetic run in {time.perf_counter() - start:.1f} s "
          f"(verdicts.jsonl {size:.2f} GB)")  # fmt: skip


def main() -> None:
    result, _ = run_in_child(__file__, __doc__.splitlines()[0], "bench-report-", generate, child)
    print(
        f"report: {result['verdict_rows']:,} verdict rows, {result['responses']:,} responses, "
        f"{RESAMPLES} resamples; load {result['load']:.1f} s, tables {result['build']:.1f} s, "
        f"HTML {result['html']:.2f} s ({result['html_bytes'] / 1e6:.2f} MB); rows per table "
        f"{result['tables']}"
    )
    print(verdict_line("full report time (fresh process, from the run folder)",
                       result["total"], 60.0))  # fmt: skip
    print(verdict_line("full report peak memory (VmHWM)", result["peak_mb"], 4096, unit="MB"))


if __name__ == "__main__":
    main()
