"""The HTML report in a real browser: Debian's chromium, headless, through Playwright.

Opens the file straight from disk (no server), with untrusted text planted in model ids
and domains, and checks what a reader would see: no console errors, no request but the
page itself, every plot present and not blank (each SVG's screenshot has more than one
colour), every table present, and the planted markup shown as text rather than run; the
drill-down from the leaderboard to a check's verdicts and explanations in three clicks,
with its filters, search and sorts compared with the run's own files.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page

from gamut_eval.analysis import (
    TABLES,
    Report,
    ReportConfig,
    build_report,
    load_run_data,
    render_html,
)
from gamut_eval.calibration import calibrate_run, write_calibration
from gamut_eval.testing import synthetic_run

pytestmark = pytest.mark.browser

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
        # gamut/reference fills the table of agreement with the reference labels.
        judges=["google/judge-g", "gamut/reference", "vllm/Qwen/judge-q"],
        questions=30,
        checks=8,
        domains=["plants", "food", EVIL_DOMAIN],
    )
    # the last judge calibrated with the first on a third of the questions
    calibration = calibrate_run(
        run_dir, "google/judge-g", judge="vllm/Qwen/judge-q", fraction=1 / 3, seed=1
    )
    write_calibration(calibration, run_dir)
    report = build_report(load_run_data(run_dir), ReportConfig(resamples=100))
    path = run_dir / "report.html"
    path.write_text(render_html(report), encoding="utf-8")
    return report, path


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
    # the drill-down's data block and its hash-admitted script, nothing else
    assert page.locator("script").count() == 2
    assert page.locator('script[type="application/json"]#gamut-data').count() == 1
    assert page.locator("img").count() == 0
    assert page.title().startswith("Gamut report")  # neither payload changed it
    body = page.inner_text("body")
    assert EVIL_MODEL in body
    assert EVIL_DOMAIN[:20] in body  # shortened in a heatmap header, whole in tables
    assert problems == []


# -- drill-down --------------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _cells(page: Page, selector: str) -> list[list[str]]:
    script = "rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))"
    rows: list[list[str]] = page.eval_on_selector_all(selector, script)
    return rows


def test_leaderboard_to_a_checks_verdicts_in_three_clicks(
    opened: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page, problems = opened
    run_dir = report[1].parent
    app = page.locator("#explore-app")
    assert not app.is_visible()  # the report opens on its own view
    page.locator(".tabs a", has_text="Explore").click()
    page.wait_for_selector('html[data-route="#explore"]')
    assert app.get_attribute("data-view") == "leaderboard"
    assert not page.locator("#report-view").is_visible()
    model = "google/gemini-c"
    app.locator("a", has_text=model).first.click()  # 1: the model
    page.wait_for_selector('#explore-app[data-view="model"]')
    assert app.get_attribute("data-view") == "model"
    app.locator('table[data-table="explore-questions"] a', has_text="q-00003").click()  # 2
    page.wait_for_selector('#explore-app[data-view="question"]')
    assert "Text only:" in app.inner_text()
    app.locator('tr[data-check="c-02"] button.check').click()  # 3: the check
    page.wait_for_selector('table[data-table="explore-verdicts"]')
    detail = _cells(page, 'table[data-table="explore-verdicts"] tbody tr')
    assert len(detail) == 8 * 2 * 3  # every model x setting x judge
    assert {r[0] for r in detail[:6]} == {model}  # the model we came from first
    names = {"meets": "meets", "partially_meets": "partially meets", "missing": "missing",
             "contradicts": "contradicts", None: "unscored"}  # fmt: skip
    expected = {
        (r["model"], r["setting"], r["judge"]): (names[r["verdict"]], r["explanation"])  # type: ignore[index]
        for r in _rows(run_dir / "verdicts.jsonl")
        if r["question_id"] == "q-00003" and r["check_id"] == "c-02"
    }
    shown = {(r[0], r[1], r[2]): (r[3].split(" ", 1)[1].strip(), r[4]) for r in detail}
    assert shown == expected
    # the passages the judges quoted are marked in this model's answers
    quoted = {
        e.split('"')[1]
        for (m, _, _), (_, e) in expected.items()
        if m == model and e.count('"') == 2
    }
    marks = set(page.eval_on_selector_all(".answer mark", "els => els.map(e => e.textContent)"))
    assert quoted
    assert marks == quoted
    answers = {
        r["setting"]: r["response"]
        for r in _rows(run_dir / "responses.jsonl")
        if r["question_id"] == "q-00003" and r["model"] == model
    }
    for setting, text in answers.items():
        shown_text = page.locator(f'.answer[data-setting="{setting}"] p').inner_text()
        assert shown_text.strip() == str(text).strip()
    # the explanation is also on hover, on the model's own verdict badges
    tips = page.eval_on_selector_all('tr[data-check="c-02"] .v', "els => els.map(e => e.title)")
    assert len(tips) == 2 * 3
    assert any(expected[(model, "multimodal", "google/judge-g")][1] in t for t in tips)
    assert problems == []


def test_filters_search_and_sorts_of_a_models_questions(
    opened: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page, problems = opened
    run_dir = report[1].parent
    dataset = {r["id"]: r for r in _rows(run_dir / "dataset.jsonl")}
    model = "openai/gpt-a"
    fragment = "#explore/m/" + str(sorted(report[0].meta.models).index(model))
    page.goto(report[1].as_uri() + fragment)
    page.wait_for_selector(f'html[data-route="{fragment}"]')
    app = page.locator("#explore-app")
    listed = 'table[data-table="explore-questions"] tbody tr'
    assert len(_cells(page, listed)) == 30
    app.get_by_label("domain", exact=True).select_option("food")
    rows = _cells(page, listed)
    assert [r[0] for r in rows] == sorted(q for q, r in dataset.items() if r["domain"] == "food")
    app.get_by_label("domain", exact=True).select_option("")
    app.get_by_label("search", exact=True).fill("please")  # the synthetic near duplicates
    expected = sorted(q for q, r in dataset.items() if "please" in str(r["question"]).lower())
    assert expected
    assert [r[0] for r in _cells(page, listed)] == expected
    app.get_by_label("search", exact=True).fill("Sentence 17 SAYS")  # in this model's answers
    answered = sorted({
        str(r["question_id"]) for r in _rows(run_dir / "responses.jsonl")
        if r["model"] == model and "sentence 17 says" in str(r["response"]).lower()
    })  # fmt: skip
    assert answered
    assert [r[0] for r in _cells(page, listed)] == answered
    app.get_by_label("search", exact=True).fill("")
    app.get_by_label("tier", exact=True).select_option("answer_critical")
    app.get_by_label("verdict", exact=True).select_option("C")
    critical = {(q, i["id"]) for q, r in dataset.items() for i in r["meta_rubric"]["items"]  # type: ignore[index]
                if i["tier"] == "answer_critical"}  # fmt: skip
    hits = sorted({
        str(v["question_id"]) for v in _rows(run_dir / "verdicts.jsonl")
        if v["model"] == model and v["verdict"] == "contradicts"
        and (v["question_id"], v["check_id"]) in critical
    })  # fmt: skip
    assert [r[0] for r in _cells(page, listed)] == hits
    app.get_by_label("tier", exact=True).select_option("")
    app.get_by_label("verdict", exact=True).select_option("")
    app.get_by_label("sort", exact=True).select_option("judges")
    scores: dict[str, list[float]] = {}
    for r in _rows(run_dir / "scores.jsonl"):
        if r["model"] == model and r["setting"] == "multimodal" and r["gamut"] is not None:
            scores.setdefault(str(r["question_id"]), []).append(100 * float(r["gamut"]))  # type: ignore[arg-type]
    spreads = {q: max(v) - min(v) for q, v in scores.items()}
    rows = _cells(page, listed)
    assert rows[0][0] == max(spreads, key=lambda q: (spreads[q], -int(q[2:])))
    shown = [float(r[-2]) for r in rows]
    assert shown == sorted(shown, reverse=True)
    assert problems == []


def test_checks_sort_by_disagreement_between_settings(
    opened: tuple[Page, list[str]], report: tuple[Report, Path]
) -> None:
    page, problems = opened
    models = sorted(report[0].meta.models)
    fragment = f"#explore/m/{models.index('meta/llama-g')}/q/5"
    page.goto(report[1].as_uri() + fragment)
    page.wait_for_selector(f'html[data-route="{fragment}"]')
    app = page.locator("#explore-app")
    app.get_by_label("sort checks", exact=True).select_option("settings")
    rows = _cells(page, 'table[data-table="explore-checks"] tbody tr')
    assert len(rows) == 8
    counts = [int(r[-1]) for r in rows]
    assert counts == sorted(counts, reverse=True)
    verdicts = _rows(report[1].parent / "verdicts.jsonl")
    by = {(v["check_id"], v["setting"], v["judge"]): v["verdict"] for v in verdicts
          if v["question_id"] == "q-00005" and v["model"] == "meta/llama-g"}  # fmt: skip
    for row in rows:
        check = row[0].split(":")[0]
        differ = sum(
            1 for j in report[0].meta.judges
            if None not in (by[(check, "multimodal", j)], by[(check, "text_only", j)])
            and by[(check, "multimodal", j)] != by[(check, "text_only", j)]
        )  # fmt: skip
        assert int(row[-1]) == differ
    assert problems == []


def test_drill_down_data_is_readable_by_other_tools(opened: tuple[Page, list[str]]) -> None:
    page, _ = opened
    shape = page.evaluate(
        """() => { const d = JSON.parse(document.getElementById('gamut-data').textContent);
        const q = d.questions[0];
        return [d.version, d.models.length, d.judges.length, d.settings.length,
                d.questions.length, q.checks.length, q.verdicts.length]; }"""
    )
    assert shape == [1, 8, 3, 2, 30, 8, 2 * 3 * 8 * 8]


# -- charts a reader can read --------------------------------------------------------------------

_TEXT_BOXES = """svg => {
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  });
  return {svg: {left: box.left, right: box.right, top: box.top, bottom: box.bottom}, texts};
}"""


def test_no_chart_text_is_cut_or_overlaps_another(opened: tuple[Page, list[str]]) -> None:
    page, _ = opened
    plots = page.locator("svg.plot")
    assert plots.count() >= 10
    for i in range(plots.count()):
        found = plots.nth(i).evaluate(_TEXT_BOXES)
        svg, texts = found["svg"], found["texts"]
        kind = plots.nth(i).get_attribute("data-plot")
        assert len(texts) > 5
        for t in texts:
            horizontal = svg["left"] - 0.5 <= t["left"] and t["right"] <= svg["right"] + 0.5
            vertical = svg["top"] - 0.5 <= t["top"] and t["bottom"] <= svg["bottom"] + 0.5
            inside = horizontal and vertical
            assert inside, f"{kind} plot {i}: {t['text']!r} runs outside its SVG"
        for a, b in combinations(texts, 2):
            overlap_x = min(a["right"], b["right"]) - max(a["left"], b["left"])
            overlap_y = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            assert overlap_x <= 0.5 or overlap_y <= 0.5, (
                f"{kind} plot {i}: {a['text']!r} overlaps {b['text']!r}"
            )


def test_every_chart_has_a_title_captions_a_legend_and_a_text_alternative(
    opened: tuple[Page, list[str]],
) -> None:
    page, _ = opened
    plots = page.locator("svg.plot")
    for i in range(plots.count()):
        plot = plots.nth(i)
        kind = plot.get_attribute("data-plot")
        assert plot.get_attribute("role") == "img"
        assert plot.get_attribute("aria-label")
        assert plot.locator(":scope > title").count() == 1
        desc = plot.locator(":scope > desc").text_content() or ""
        assert len(desc) > 40, f"{kind} plot {i} has no description of its data"
        assert plot.locator("text.ptitle").count() == 1
        assert plot.locator("text.caption").count() >= 2, f"{kind} plot {i}: axis captions"
        assert plot.locator("g.legend text").count() >= 2, f"{kind} plot {i} has no legend"
    # the verdict colours are the Okabe-Ito ones
    script = "els => els.map(e => e.getAttribute('fill'))"
    fills = set(page.eval_on_selector_all('svg[data-plot="verdicts"] rect[fill]', script))
    assert fills <= {"#009E73", "#56B4E9", "#CFCFCF", "#D55E00"}
    assert len(fills) == 4


def test_questions_past_the_text_budget_say_where_their_texts_are(
    browser: Browser, report: tuple[Report, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gamut_eval.analysis import _explore
    from gamut_eval.analysis._explore import explore_data

    budget = 60_000  # room for the texts of the first questions only
    monkeypatch.setattr(
        _explore, "explore_data", functools.partial(explore_data, text_budget=budget)
    )
    run_dir = report[1].parent
    path = run_dir / "report-small.html"
    path.write_text(render_html(report[0], load_run_data(run_dir)), encoding="utf-8")
    data = json.loads(path.read_text().split('id="gamut-data">')[1].split("</script>")[0])
    fit = data["questions_with_texts"]
    assert 0 < fit < 30
    page = browser.new_page()
    page.goto(path.as_uri() + "#explore/m/0/q/0")
    page.wait_for_selector('html[data-route="#explore/m/0/q/0"]')
    assert page.locator(".answer").count() == 2
    page.goto(path.as_uri() + f"#explore/m/0/q/{fit}/c/0")
    page.wait_for_selector(f'html[data-route="#explore/m/0/q/{fit}/c/0"]')
    note = page.locator("#explore-app p.note").first.inner_text()
    assert "60,000 characters" in note
    assert f"{fit} of 30 questions" in note
    assert page.locator(".answer").count() == 0
    shown = page.locator('table[data-table="explore-verdicts"] tbody tr').first.inner_text()
    assert "(not in this page)" in shown  # the verdicts stay, the explanations say so
    page.close()


def test_the_leaderboard_tables_open_a_model_in_the_drill_down(
    opened: tuple[Page, list[str]],
) -> None:
    page, problems = opened
    table = page.locator('table[data-table="leaderboard"]').first
    assert table.locator("tbody tr a").count() == 8  # every model of the table is a link
    table.locator("tbody tr a", has_text="meta/llama-g").click()
    page.wait_for_selector('#explore-app[data-view="model"]')
    app = page.locator("#explore-app")
    assert app.get_attribute("data-view") == "model"
    assert app.locator("h3").inner_text() == "meta/llama-g"
    assert problems == []
