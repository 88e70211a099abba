"""The HTML report in a real browser: Debian's chromium, headless, through Playwright.

Opens the file straight from disk (no server), with untrusted text planted in model ids
and domains, and checks what a reader would see: no console errors, no request but the
page itself, every plot present and not blank (each SVG's screenshot has more than one
colour), every table present, and the planted markup shown as text rather than run.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, sync_playwright

from gamut_eval.analysis import (
    TABLES,
    Report,
    ReportConfig,
    build_report,
    load_run,
    render_html,
    synthetic_run,
)

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EVIL_MODEL = 'evil/<img src=x onerror="document.title=1">'
EVIL_DOMAIN = "<script>document.title='pwned'</script>"
PLOTS = ("scores", "verdicts", "heatmap", "scatter", "modality")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    run_dir = synthetic_run(
        tmp_path_factory.mktemp("browser") / "run",
        models=[
            "openai/gpt-a",
            "openai/gpt-b",
            "google/gemini-c",
            "google/gemini-d",
            "anthropic/claude-e",
            "anthropic/claude-f",
            "meta/llama-g",
            EVIL_MODEL,
        ],
        judges=["google/judge-g", "anthropic/judge-a", "vllm/Qwen/judge-q"],
        questions=30,
        checks=8,
        domains=["plants", "food", EVIL_DOMAIN],
    )
    report = build_report(load_run(run_dir), ReportConfig(resamples=100))
    path = run_dir / "report.html"
    path.write_text(render_html(report), encoding="utf-8")
    return report, path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests drive Debian's chromium "
            "(install it with `make browser`, i.e. `apt-get install chromium`)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def opened(browser: Browser, report: tuple[Report, Path]) -> Iterator[tuple[Page, list[str]]]:
    """The report loaded from disk; the list collects every problem the page reports."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)  # fmt: skip
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    uri = report[1].as_uri()
    page.on("request", lambda r: problems.append(f"request: {r.url}") if r.url != uri else None)
    page.goto(uri)
    page.wait_for_load_state("load")
    yield page, problems
    page.close()


def test_no_console_errors_and_nothing_loaded(opened: tuple[Page, list[str]]) -> None:
    page, problems = opened
    assert page.title().startswith("Gamut report")
    assert problems == []


def test_every_plot_is_present_and_not_blank(opened: tuple[Page, list[str]]) -> None:
    page, problems = opened
    kinds = page.eval_on_selector_all("svg.plot", "els => els.map(e => e.dataset.plot)")
    assert set(kinds) >= set(PLOTS), kinds
    plots = page.locator("svg.plot")
    assert plots.count() == len(kinds)
    for i in range(plots.count()):
        plot = plots.nth(i)
        box = plot.bounding_box()
        assert box is not None
        assert box["width"] > 100
        assert box["height"] > 50
        image = Image.open(io.BytesIO(plot.screenshot())).convert("RGB")
        colours = image.getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 2, f"plot {i} ({kinds[i]}) is blank"
    assert problems == []


def test_every_table_is_present(
    opened: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page, _ = opened
    for spec in TABLES:
        rows = report[0].table(spec.name)
        assert rows, f"the fixture should exercise {spec.name}"
        table = page.locator(f'table[data-table="{spec.name}"]')
        assert table.count() >= 1, f"no table for {spec.name}"
        assert table.first.locator("tbody tr").count() >= 1
    leaderboard = page.locator('table[data-table="leaderboard"]').first
    assert leaderboard.is_visible()


def test_untrusted_text_is_shown_not_run(opened: tuple[Page, list[str]]) -> None:
    page, problems = opened
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0
    assert page.title().startswith("Gamut report")  # neither payload changed it
    body = page.inner_text("body")
    assert EVIL_MODEL in body
    assert EVIL_DOMAIN[:20] in body  # shortened in a heatmap header, whole in tables
    assert problems == []
