"""Performance of the HTML report's drill-down at paper scale: page weight and load time.

A synthetic run folder shaped like the paper's (14 models x 1,813 questions x 3 judges x 2
settings x 30 checks: 4,568,760 verdicts with explanations that quote the answers, and
50,764 answers) is generated once; a fresh child process builds the report and writes
report.html with the embedded drill-down data, as `gamut report` does. Then headless
Chromium (Debian's, through Playwright) opens the file from disk, cold, and the time to
the drawn leaderboard of the drill-down view (#explore) is measured, and to the report view
with its tables made sortable, then the time of each drill-down step (a model's
questions, a question, a check's 84 verdicts), each the median of 3 runs.

Targets: the page opens (load event and leaderboard drawn) in under 3 s; each drill-down
step under 1 s. The file size, and how much of it is the embedded data, is printed.
Usage: python bench/bench_report_html.py [--workdir DIR]   (DIR keeps the run for reuse)
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from playwright.sync_api import Browser, sync_playwright

from _common import peak_rss_mb, run_in_child, verdict_line
from gamut_eval.analysis import ReportConfig, build_report, load_run_data, render_html
from gamut_eval.testing import synthetic_run

QUESTIONS, MODELS, JUDGES, CHECKS = 1813, 14, 3, 30
SHAPE = {"questions": QUESTIONS, "models": MODELS, "judges": JUDGES, "checks": CHECKS,
         "answers": True}  # fmt: skip
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update"]  # fmt: skip


def child(run_dir: Path) -> None:
    """Runs in a fresh process: the report and its page, as `gamut report` writes them."""
    start = time.perf_counter()
    run = load_run_data(run_dir)
    report = build_report(run, ReportConfig(resamples=1000))
    built = time.perf_counter()
    html = render_html(report, run)
    (run_dir / "report.html").write_text(html, encoding="utf-8")
    done = time.perf_counter()
    data = re.search(r'id="gamut-data">(.*?)</script>', html, re.S)
    payload = json.loads(data.group(1)) if data else {}
    print(json.dumps({
        "tables": built - start, "html": done - built, "peak_mb": peak_rss_mb(),
        "html_bytes": len(html.encode()), "data_bytes": len(data.group(1).encode()) if data else 0,
        "with_texts": payload.get("questions_with_texts"),
        "questions": len(payload.get("questions", [])),
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
    print(f"generated the synthetic run in {time.perf_counter() - start:.1f} s")


def _once(browser: Browser, path: Path) -> dict[str, float]:
    """One cold open and the three drill-down steps, in a new page."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    out = {}
    start = time.perf_counter()
    page.goto(path.as_uri() + "#explore", wait_until="load")
    page.wait_for_selector('#explore-app[data-view="leaderboard"]')
    out["open"] = time.perf_counter() - start
    report = browser.new_page(viewport={"width": 1280, "height": 900})
    start = time.perf_counter()
    report.goto(path.as_uri(), wait_until="load")
    report.wait_for_selector('table[data-table="leaderboard"] button.sort')
    out["report"] = time.perf_counter() - start
    report.close()
    app = page.locator("#explore-app")
    steps = [
        ("model", app.locator("table a").first, '#explore-app[data-view="model"]'),
        ("question", app.locator("table a").nth(5), '#explore-app[data-view="question"]'),
        ("check", app.locator("button.check").nth(3), 'table[data-table="explore-verdicts"]'),
    ]
    for name, target, drawn in steps:
        start = time.perf_counter()
        target.click()
        page.wait_for_selector(drawn)
        out[name] = time.perf_counter() - start
    rows = page.locator('table[data-table="explore-verdicts"] tbody tr').count()
    if errors or rows != MODELS * JUDGES * 2:
        raise SystemExit(f"the page failed: {errors or rows}")
    page.close()
    return out


def browse(path: Path) -> dict[str, float]:
    """Seconds to open the page cold and for each drill-down step (medians of 3)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        runs = [_once(browser, path) for _ in range(3)]
        browser.close()
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    result, times = run_in_child(
        __file__, __doc__.splitlines()[0], "bench-report-html-", generate, child,
        then=lambda run_dir: browse(run_dir / "report.html"),
    )  # fmt: skip
    assert times is not None
    print(
        f"report.html {result['html_bytes'] / 1e6:.1f} MB, of which the embedded data "
        f"{result['data_bytes'] / 1e6:.1f} MB; texts embedded for {result['with_texts']} of "
        f"{result['questions']} questions; tables {result['tables']:.1f} s, page "
        f"{result['html']:.1f} s, peak memory {result['peak_mb']:.0f} MB"
    )
    print(verdict_line("page opens on the drill-down (load + leaderboard drawn, cold)",
                       times["open"], 3.0))  # fmt: skip
    print(verdict_line("page opens on the report (load + tables sortable)", times["report"], 3.0))
    for step in ("model", "question", "check"):
        print(verdict_line(f"drill-down step: {step}", times[step], 1.0))


if __name__ == "__main__":
    main()
