"""The report page as a reader uses it, in Debian's chromium through Playwright: tables
sorted by a click on a header, a table downloaded as CSV, the drill-down in a view of its
own, verdict chips matching their legend, no horizontal page scroll from a phone (360x740,
390x844) to a wide screen (1440x900), the dark scheme and print styles. Screenshots of
each size and scheme go to the git-ignored folder of the test run (``screenshots``
fixture)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from gamut_eval.analysis import (
    LeaderboardRow,
    Report,
    ReportConfig,
    build_report,
    load_run_data,
    render_html,
)
from gamut_eval.testing import synthetic_run

pytestmark = pytest.mark.browser

MODELS = ["openai/gpt-a", "google/gemini-b", "anthropic/claude-c", "meta/llama-d",
          "mistral/mistral-e"]  # fmt: skip
JUDGES = ["google/judge-g", "vllm/Qwen/judge-q"]
SIZES = {"small-phone": (360, 740), "phone": (390, 844), "desktop": (1440, 900)}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    run_dir = synthetic_run(
        tmp_path_factory.mktemp("page") / "run", models=MODELS, judges=JUDGES, questions=12,
        checks=6, domains=["plants", "food"],
    )  # fmt: skip
    report = build_report(load_run_data(run_dir), ReportConfig(resamples=50))
    path = run_dir / "report.html"
    path.write_text(render_html(report), encoding="utf-8")
    return report, path


def _open(browser: Browser, uri: str, problems: list[str], **context: object) -> Page:
    page = browser.new_page(**context)  # type: ignore[arg-type]
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)  # fmt: skip
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(uri)
    page.wait_for_load_state("load")
    return page


@pytest.fixture
def page(browser: Browser, report: tuple[Report, Path]) -> Iterator[tuple[Page, list[str]]]:
    problems: list[str] = []
    page = _open(browser, report[1].as_uri(), problems, viewport={"width": 1280, "height": 900},
                 accept_downloads=True)  # fmt: skip
    yield page, problems
    page.close()


def _go(page: Page, uri: str, fragment: str = "") -> None:
    """Opens ``fragment`` of the page and waits for its view: the page draws a view when
    the fragment changes, after the navigation that changed it returns."""
    page.goto(uri + fragment)
    _drawn(page, fragment)


def _drawn(page: Page, fragment: str) -> None:
    page.wait_for_selector(f'html[data-route="{fragment}"]', state="attached")


def _column(page: Page, table: str, index: int) -> list[str]:
    script = f"rows => rows.map(r => r.cells[{index}].firstChild.textContent.trim())"
    values: list[str] = page.locator(table).first.locator("tbody tr").evaluate_all(script)
    return values


def _first_board(report: Report) -> list[LeaderboardRow]:
    setting, judge = report.meta.settings[0], report.meta.judges[0]
    return [r for r in report.leaderboard if r.setting == setting and r.judge == judge]


# -- sorting -------------------------------------------------------------------------------------


def test_a_header_click_sorts_numbers_as_numbers_and_names_as_text(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    rows = _first_board(report[0])
    table = 'table[data-table="leaderboard"] >> nth=0'
    header = page_.locator(table).locator("th", has_text="gamut").first
    assert header.get_attribute("aria-sort") is None
    header.locator("button.sort").click()
    assert header.get_attribute("aria-sort") == "ascending"
    by_score = sorted(rows, key=lambda r: r.gamut or 0.0)
    assert by_score[0].model != rows[0].model  # the order really changes
    assert _column(page_, table, 0) == [r.model for r in by_score]
    header.locator("button.sort").click()
    assert header.get_attribute("aria-sort") == "descending"
    assert _column(page_, table, 0) == [r.model for r in reversed(by_score)]
    model = page_.locator(table).locator("th", has_text="model").first
    model.locator("button.sort").click()
    assert model.get_attribute("aria-sort") == "ascending"
    assert header.get_attribute("aria-sort") is None  # one sorted column at a time
    assert _column(page_, table, 0) == sorted(MODELS)
    assert problems == []


def test_sorting_a_numeric_column_puts_dashes_last(browser: Browser, tmp_path: Path) -> None:
    """A dash (no value) is not a number: it goes last whichever the direction."""
    problems: list[str] = []
    page = _open(browser, "about:blank", problems)
    page.set_content("<p>blank</p>")
    html = render_html_table([("a", "3.5"), ("b", "—"), ("c", "-12.0"), ("d", "10.25")])
    path = tmp_path / "t.html"
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    button = page.locator("th.num button.sort")
    button.click()
    assert _column(page, "table", 0) == ["c", "a", "d", "b"]
    button.click()
    assert _column(page, "table", 0) == ["d", "a", "c", "b"]
    assert problems == []
    page.close()


def render_html_table(rows: list[tuple[str, str]]) -> str:
    """A page of one two-column table, through the report's own template."""
    from gamut_eval.analysis._html import Block, Header, Section, render_page

    block = Block(kind="table", text="t", name="t",
                  headers=[Header("name", False), Header("value", True)],
                  rows=[[(a, ""), (b, "")] for a, b in rows])  # fmt: skip
    return render_page("t", "s", [], [Section("s", "S", "", [block])], "f")


def test_an_open_checks_detail_row_stays_under_it_when_sorted(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    _go(page_, report[1].as_uri(), "#explore/m/1/q/2/c/3")
    checks = page_.locator('table[data-table="explore-checks"]')
    for header in ("judges disagree", "check", "settings disagree"):
        checks.locator("th", has_text=header).locator("button.sort").click()
        classes = checks.locator(":scope > tbody > tr").evaluate_all(
            "rows => rows.map(r => r.className)"
        )
        assert classes.count("detail") == 1
        assert classes[classes.index("detail") - 1] == "open"
    assert problems == []


# -- CSV -----------------------------------------------------------------------------------------


def _download(page: Page, button: str) -> tuple[str, list[list[str]]]:
    with page.expect_download() as info:
        page.locator(button).first.click()
    download = info.value
    text = Path(download.path()).read_text(encoding="utf-8")
    return download.suggested_filename, list(csv.reader(io.StringIO(text)))


def test_a_table_downloads_as_csv_in_the_order_shown(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    rows = _first_board(report[0])
    name, lines = _download(page_, 'table[data-table="leaderboard"] >> nth=0 >> xpath=../.. '
                            ">> .table-tools button.csv")  # fmt: skip
    setting, judge = report[0].meta.settings[0], report[0].meta.judges[0]
    assert name == f"{setting}-judged-by-{judge}.csv".replace("/", "-")
    head = lines[0]
    assert head[:4] == ["model", "rank", "responses", "scored"]
    g = head.index("gamut")
    assert head[g + 1 : g + 3] == ["gamut low", "gamut high"]
    assert "setting" not in head  # the columns shown, not the JSON's
    assert len(lines) == 1 + len(rows)
    for line, row in zip(lines[1:], rows, strict=True):
        assert line[0] == row.model
        assert line[g : g + 3] == [f"{100 * v:.1f}" for v in (row.gamut, row.gamut_low,
                                                               row.gamut_high)]  # type: ignore[operator]  # fmt: skip
    # sorted by a header first: the CSV follows
    page_.locator('table[data-table="leaderboard"]').first.locator("th", has_text="model") \
        .locator("button.sort").click()  # fmt: skip
    _, lines = _download(page_, ".table-tools button.csv")
    assert [line[0] for line in lines[1:]] == sorted(MODELS)
    assert problems == []  # the strict CSP let the download through


def test_a_drill_down_table_downloads_as_csv(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    _go(page_, report[1].as_uri(), "#explore/m/0/q/0/c/1")
    name, lines = _download(page_, "#explore-app .detail .table-tools button.csv")
    assert name.startswith("every-verdict-on-")
    assert lines[0] == ["model", "setting", "judge", "verdict", "explanation"]
    assert len(lines) == 1 + len(MODELS) * 2 * len(JUDGES)
    assert {line[3].split(" ", 1)[1] for line in lines[1:]} <= {
        "meets", "partially meets", "missing", "contradicts", "unscored", "not judged"}  # fmt: skip
    assert problems == []


# -- the drill-down's own view -------------------------------------------------------------------


def test_the_drill_down_is_a_view_of_its_own(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    report_view, explore = page_.locator("#report-view"), page_.locator("#explore")
    assert report_view.is_visible()
    assert not explore.is_visible()
    assert page_.locator("#explore-app").get_attribute("data-view") is None  # not drawn yet
    tab = page_.locator(".tabs a", has_text="Explore")
    assert page_.locator(".tabs a", has_text="Report").get_attribute("aria-current") == "page"
    tab.click()
    _drawn(page_, "#explore")
    assert explore.is_visible()
    assert not report_view.is_visible()
    assert tab.get_attribute("aria-current") == "page"
    assert page_.evaluate("window.scrollY") == 0  # the drill-down starts at the top
    page_.locator("#explore-app a", has_text=MODELS[2]).click()
    _drawn(page_, f"#explore/m/{sorted(MODELS).index(MODELS[2])}")
    assert page_.locator("#explore-app").get_attribute("data-view") == "model"
    page_.go_back()
    _drawn(page_, "#explore")
    assert page_.locator("#explore-app").get_attribute("data-view") == "leaderboard"
    page_.go_back()  # back to the report, where it was
    _drawn(page_, "")
    assert report_view.is_visible()
    assert not explore.is_visible()
    _go(page_, report[1].as_uri(), "#explore")
    _go(page_, report[1].as_uri(), "#modality")  # a section's link shows the report there
    assert report_view.is_visible()
    top = page_.locator("#modality").bounding_box()
    assert top is not None
    assert abs(top["y"]) < 2
    assert problems == []


def test_verdict_chips_show_what_the_legend_says(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    _go(page_, report[1].as_uri(), "#explore/m/0/q/1")
    legend = page_.locator("#explore-app .legend > span").evaluate_all(
        "els => els.map(e => [e.querySelector('.v').textContent, e.textContent.slice("
        "e.querySelector('.v').textContent.length).trim()])"
    )
    assert [name for _, name in legend] == [
        "meets", "partially meets", "missing", "contradicts", "unscored", "not judged"]  # fmt: skip
    symbols = {name: symbol for symbol, name in legend}
    assert len(set(symbols.values())) == 6
    assert not set(symbols.values()) & set("MPOCU")  # no letters to decode
    chips = page_.locator('table[data-table="explore-checks"] .v').evaluate_all(
        "els => els.map(e => [e.textContent, e.getAttribute('aria-label')])"
    )
    assert len(chips) == 6 * 2 * len(JUDGES)
    for symbol, name in chips:
        assert symbols[name] == symbol
    assert problems == []


# -- layout, schemes, print ----------------------------------------------------------------------

_OVERFLOW = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
_SMALLEST_CHART_TEXT = """() => Math.min(...[...document.querySelectorAll('svg.plot text')]
  .map(t => t.getBoundingClientRect().height).filter(h => h > 0))"""


@pytest.mark.parametrize("size", SIZES)
def test_no_horizontal_page_scroll_and_legible_charts(
    browser: Browser, report: tuple[Report, Path], screenshots: Path, size: str
) -> None:
    width, height = SIZES[size]
    problems: list[str] = []
    page = _open(browser, report[1].as_uri(), problems,
                 viewport={"width": width, "height": height})  # fmt: skip
    for view in ("", "#explore", "#explore/m/1", "#explore/m/1/q/4/c/2"):
        _go(page, report[1].as_uri(), view)
        scroll, client = page.evaluate(_OVERFLOW)
        assert scroll <= client, f"{size} {view or 'report'}: page {scroll} px wide in {client}"
        name = view.strip("#").replace("/", "-") or "report"
        page.screenshot(path=str(screenshots / f"report-{size}-{name}.png"))
    _go(page, report[1].as_uri())
    # charts keep their text at least 10 px tall (they scroll in their figure on a phone)
    assert page.evaluate(_SMALLEST_CHART_TEXT) >= 10
    if size == "desktop":  # the widest table, the leaderboard, needs no scrolling of its own
        fits = page.locator('table[data-table="leaderboard"]').first.evaluate(
            "t => t.parentElement.scrollWidth <= t.parentElement.clientWidth"
        )
        assert fits
    page.screenshot(path=str(screenshots / f"report-{size}-full.png"), full_page=True)
    assert problems == []
    page.close()


def _colours(page: Page) -> list[str]:
    colours: list[str] = page.evaluate(
        "() => [getComputedStyle(document.body).backgroundColor,"
        " getComputedStyle(document.body).color,"
        " getComputedStyle(document.querySelector('svg.plot .bg')).fill]"
    )
    return colours


def test_the_dark_scheme_follows_the_system_setting(
    page: tuple[Page, list[str]], report: tuple[Report, Path], screenshots: Path
) -> None:
    page_, problems = page
    light = _colours(page_)
    assert light[0] == "rgb(255, 255, 255)"
    page_.emulate_media(color_scheme="dark")
    dark = _colours(page_)
    assert dark[0] != light[0]
    assert dark[2] == dark[0]  # the charts' background follows the page's
    assert dark[1] != light[1]
    page_.screenshot(path=str(screenshots / "report-dark.png"))
    _go(page_, report[1].as_uri(), "#explore/m/0/q/0/c/0")
    page_.screenshot(path=str(screenshots / "report-dark-check.png"))
    assert problems == []


def test_print_shows_the_report_without_controls(
    page: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page_, problems = page
    _go(page_, report[1].as_uri(), "#explore")  # printed from the drill-down: the report
    page_.emulate_media(media="print", color_scheme="dark")
    assert page_.locator("#report-view").is_visible()
    assert not page_.locator("#explore").is_visible()
    assert not page_.locator(".tabs").is_visible()
    assert not page_.locator(".table-tools").first.is_visible()
    assert _colours(page_)[0] == "rgb(255, 255, 255)"  # paper is white
    page_.set_viewport_size({"width": 718, "height": 1000})  # A4's printable width
    scroll, client = page_.evaluate(_OVERFLOW)
    assert scroll <= client  # the leaderboard's 17 columns fit on paper
    folded = "() => document.querySelectorAll('#report-view details:not([open])').length"
    before = page_.evaluate(folded)
    assert before >= 2
    page_.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    assert page_.evaluate(folded) == 0  # the folded tables are printed too
    page_.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
    assert page_.evaluate(folded) == before
    assert page_.pdf()[:4] == b"%PDF"
    assert problems == []


def test_a_page_without_the_drill_down_still_sorts_its_tables(
    browser: Browser, report: tuple[Report, Path], tmp_path: Path
) -> None:
    path = tmp_path / "plain.html"
    path.write_text(render_html(report[0], explore=False), encoding="utf-8")
    problems: list[str] = []
    page = _open(browser, path.as_uri(), problems)
    assert page.locator(".tabs").count() == 0
    assert page.locator("#explore-app").count() == 0
    header = page.locator('table[data-table="leaderboard"]').first.locator("th").first
    header.locator("button.sort").click()
    assert header.get_attribute("aria-sort") == "ascending"
    assert page.locator(".table-tools button.csv").count() == page.locator(
        "table[data-table]").count()  # fmt: skip
    assert problems == []
    page.close()
