"""A report as one self-contained HTML page: tables, plots as inline SVG, and the drill-down.

The page is built from the ``Report`` alone (so it can be re-rendered from the JSON), one
section per analysis: leaderboards with interval and verdict plots, per-domain heatmaps,
judge robustness with judge-vs-judge scatter plots, the modality gap chart, question
diversity. Sections without data say why instead of disappearing.

The page is one file: no fonts, no external URLs. A strict Content-Security-Policy (meta
tag) forbids everything but the page's own stylesheet and its one drill-down script, each
admitted by its SHA-256 hash, so even text that slipped past escaping could not load or
run anything. Jinja's autoescaping escapes every value; only the stylesheet, the script,
the SVG plots (built by ``_svg``, which escapes its own text) and the embedded JSON (with
every ``<``, ``>`` and ``&`` written as a ``\\u`` escape, so it cannot end its block) are
marked safe.

The page's Jinja template (``report.html``), styles and script are in ``page/`` beside this
module: ``report.css`` (light and dark schemes following the system setting, a layout from
phone to wide screens, print styles) and the script as ES modules (``dom.js``,
``tables.js``, ``explore.js``, ``main.js``, checked by oxlint in ``make lint``), joined at
import time into one classic script (``bundle_modules``). The script makes every table
sortable by a click on a header and downloadable as CSV, and shows one of two views from
the URL fragment: the report, or the drill-down (``#explore...``). The drill-down reads the
page's ``gamut-data`` block (``_explore``) once, when first shown, and draws one view at a
time: ``#explore`` (the leaderboard), ``#explore/m/M`` (a model's questions, filtered,
searched and sorted, shown a hundred at a time), ``#explore/m/M/q/Q`` (a question: image,
both variants, meta-rubric, answers side by side, checks) and ``#explore/m/M/q/Q/c/C`` (one
check opened: every model x judge x setting verdict with its explanation, and the passages
the judges quoted marked in the answers). Every text from the run is set with
``textContent``, never parsed as markup.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from itertools import combinations

import jinja2
from markupsafe import Markup

from gamut_eval.analysis._explore import explore_json
from gamut_eval.analysis._rankings import BreakdownRow, JudgeScoreRow
from gamut_eval.analysis._report import TABLES, CalibratedRow, Report
from gamut_eval.analysis._rundata import RunData
from gamut_eval.analysis._svg import (
    VERDICT_PALETTE,
    Bar,
    Interval,
    Point,
    heatmap,
    interval_chart,
    scatter_chart,
    stacked_bars,
)
from gamut_eval.analysis._tables import Row, cell_text, display_columns

_PAGE = files("gamut_eval.analysis").joinpath("page")
MODULES = ("dom.js", "tables.js", "explore.js", "main.js")
"""The page's ES modules, each after the modules it imports."""

_IMPORT = re.compile(r'^import \{[^}]*\} from "\./([a-z]+\.js)";\n', re.M)
_TOP_NAME = re.compile(r"^(?:export )?(?:async )?(?:function\*?|const|let|class) (\w+)", re.M)


def bundle_modules(sources: Sequence[tuple[str, str]]) -> str:
    """ES modules (name, text) joined into one classic script: each module's imports of
    the modules before it removed, ``export`` dropped, the whole in one strict function
    scope. A module importing one not before it, or two modules declaring the same
    top-level name, is an error (the join would change what a name means)."""
    seen: set[str] = set()
    names: dict[str, str] = {}
    parts = []
    for name, text in sources:
        for imported in _IMPORT.findall(text):
            if imported not in seen:
                raise ValueError(f"{name} imports {imported}, which is not joined before it")
        body = _IMPORT.sub("", text)
        if re.search(r"^\s*import\b", body, re.M):
            raise ValueError(f"{name}: only single-line imports from ./x.js can be joined")
        for declared in _TOP_NAME.findall(body):
            if declared in names:
                raise ValueError(f"{name} and {names[declared]} both declare {declared}")
            names[declared] = name
        parts.append(f"// {name}\n" + re.sub(r"^export ", "", body, flags=re.M).strip())
        seen.add(name)
    return '(() => {\n"use strict";\n' + "\n\n".join(parts) + "\n})();"


PAGE_JS = bundle_modules([(m, _PAGE.joinpath(m).read_text(encoding="utf-8")) for m in MODULES])
CSS = _PAGE.joinpath("report.css").read_text(encoding="utf-8").strip()


def _style_hash(css: str) -> str:
    digest = hashlib.sha256(css.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


CSP = (
    f"default-src 'none'; style-src {_style_hash(CSS)}; script-src {_style_hash(PAGE_JS)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""Nothing may load or run except the page's own stylesheet and script (by hash); a
CSV download is a ``blob:`` link the script clicks, which loads nothing into the page."""


def embed_json(text: str) -> Markup:
    """JSON text made safe inside ``<script type="application/json">``: no ``<``, ``>``
    or ``&`` is left to end the block or open a comment (``JSON.parse`` reads the escapes
    back)."""
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


@dataclass(frozen=True)
class Header:
    text: str
    numeric: bool


@dataclass(frozen=True)
class Block:
    """One piece of a section: a heading, plots, a table or a note."""

    kind: str
    """``h3``, ``plots``, ``table`` or ``note``."""
    text: str = ""
    plots: list[Markup] = field(default_factory=list)
    name: str = ""
    """For tables: the report table it shows (``data-table``)."""
    headers: list[Header] = field(default_factory=list)
    rows: list[list[tuple[str, str]]] = field(default_factory=list)
    collapsed: bool = False


@dataclass(frozen=True)
class Section:
    anchor: str
    title: str
    intro: str
    blocks: list[Block]


_TEMPLATE = _PAGE.joinpath("report.html").read_text(encoding="utf-8")

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def render_page(
    title: str,
    summary: str,
    notes: list[str],
    sections: list[Section],
    footer: str,
    data: str | None = None,
) -> str:
    """The whole page; every string argument is escaped. ``data``: the drill-down's JSON
    text, embedded once for the drill-down view (no drill-down without it)."""
    return _ENV.from_string(_TEMPLATE).render(
        data=embed_json(data) if data else None,
        js=Markup(PAGE_JS),
        csp=Markup(CSP),
        css=Markup(CSS),
        title=title,
        summary=summary,
        notes=notes,
        sections=sections,
        footer=footer,
    )


_SPECS = {spec.name: spec for spec in TABLES}


def _x100(value: float | None) -> float | None:
    return None if value is None else 100 * value


def table_block(
    name: str,
    rows: Sequence[Row],
    drop: tuple[str, ...] = (),
    collapsed: bool = False,
    caption: str | None = None,
) -> Block:
    """A report table as a page table; interval bounds shown beside their values."""
    spec = _SPECS[name]
    columns = display_columns(spec.row, drop)
    return Block(
        kind="table",
        text=caption or spec.title,
        name=name,
        headers=[Header(c.header, c.unit is not None) for c in columns],
        rows=[[cell_text(row, c) for c in columns] for row in rows],
        collapsed=collapsed,
    )


def _note(text: str) -> Block:
    return Block(kind="note", text=text)


def _leaderboard(report: Report) -> Section:
    blocks: list[Block] = []
    for setting in report.meta.settings:
        for judge in report.meta.judges:
            rows = [r for r in report.leaderboard if r.setting == setting and r.judge == judge]
            if not rows:
                continue
            title = f"{setting}, judged by {judge}"
            scores = [
                Interval(r.model, _x100(r.gamut), _x100(r.gamut_low), _x100(r.gamut_high))
                for r in rows
            ]
            bars = [
                Bar(
                    r.model,
                    [r.share_meets, r.share_partially_meets, r.omission_rate, r.contradiction_rate],
                )
                for r in rows
            ]
            plots = [
                interval_chart(scores, f"Gamut score: {title}", "Gamut score (x100)"),
                stacked_bars(bars, VERDICT_PALETTE, f"Verdicts: {title}"),
            ]
            blocks += [
                Block(kind="h3", text=title),
                Block(kind="plots", plots=[Markup(p) for p in plots]),
                table_block("leaderboard", rows, drop=("setting", "judge"), caption=title),
            ]
    return Section(
        "leaderboard",
        "Leaderboard",
        "Table 1. Gamut score x100: mean over questions of each response's score, with its "
        f"{_pct(report)} bootstrap interval over questions. The verdict shares are averaged "
        "per response; omission (missing) and contradiction rates are shown apart, since "
        "a cautious model omits and a confidently wrong one contradicts.",
        blocks,
    )


def _pct(report: Report) -> str:
    return f"{100 * report.meta.confidence:g}%"


def _breakdowns(report: Report) -> Section:
    blocks: list[Block] = []
    judge = report.meta.primary_judge
    dimensions = list(dict.fromkeys(r.dimension for r in report.breakdowns))
    for dimension in dimensions:
        rows = [r for r in report.breakdowns if r.dimension == dimension]
        plots = [
            Markup(_heatmap(report, rows, setting, judge, dimension))
            for setting in report.meta.settings
            if any(r.setting == setting and r.judge == judge for r in rows)
        ]
        blocks += [
            Block(kind="h3", text=f"By {dimension}"),
            Block(kind="plots", plots=plots),
            table_block(
                "breakdowns",
                rows,
                drop=("dimension",),
                collapsed=True,
                caption=f"Scores by {dimension}, every setting and judge",
            ),
        ]
    if not dimensions:
        blocks.append(_note("No domain or popularity is known for these questions."))
    return Section(
        "breakdowns",
        "By domain and popularity",
        f"Gamut score x100 per group of questions ({judge}); each group is resampled on its "
        "own for the intervals in the tables.",
        blocks,
    )


def _heatmap(
    report: Report, rows: Sequence[BreakdownRow], setting: str, judge: str, dim: str
) -> str:
    order = [r.model for r in report.leaderboard if r.setting == setting and r.judge == judge]
    cells = {(r.model, r.group): r.gamut for r in rows if r.setting == setting and r.judge == judge}
    groups = list(dict.fromkeys(g for _, g in cells))
    values = [[_x100(cells.get((m, g))) for g in groups] for m in order]
    return heatmap(order, groups, values, f"Gamut score by {dim}: {setting}, {judge}", dim)


_GAMUT = next(c for c in display_columns(JudgeScoreRow) if c.name == "gamut")


def _judge_wide(report: Report, setting: str) -> Block:
    """Table 2 as published: a row per model, a column per judge."""
    judges = report.meta.judges
    cells = {(r.model, r.judge): r for r in report.judge_scores if r.setting == setting}
    models = [r.model for r in report.leaderboard if r.setting == setting and r.judge == judges[0]]

    def cell(model: str, judge: str) -> tuple[str, str]:
        row = cells.get((model, judge))
        return ("—", "") if row is None else cell_text(row, _GAMUT)

    rows = [[(model, ""), *(cell(model, j) for j in judges)] for model in models]
    return Block(
        kind="table",
        text=f"Gamut score x100 per judge: {setting}",
        name="judge_scores",
        headers=[Header("model", False), *(Header(j, True) for j in judges)],
        rows=rows,
    )


def _scatters(report: Report, setting: str) -> list[Markup]:
    scores = {(r.model, r.judge): r.gamut for r in report.judge_scores if r.setting == setting}
    plots = []
    for a, b in combinations(report.meta.judges, 2):
        points = [
            Point(model, 100 * x, 100 * y)
            for model in report.meta.models
            if (x := scores.get((model, a))) is not None
            and (y := scores.get((model, b))) is not None
        ]
        title = f"{a} vs {b}: {setting}"
        plots.append(Markup(scatter_chart(points, title, f"{a} (x100)", f"{b} (x100)")))
    return plots


def _robustness(report: Report) -> Section:
    intro = (
        "Table 2. The same responses scored by each judge: ranking agreement (Kendall's "
        "tau-b), swapped pairs, per-model gaps, leniency (a judge's score minus the other "
        "judges' mean) and self-preference (the extra a judge gives its own family beyond "
        "its general leniency, compared with judges of other families)."
    )
    if len(report.meta.judges) < 2:
        note = "This run has one judge; re-score the same responses with several judges."
        return Section("robustness", "Judge robustness", intro, [_note(note)])
    blocks: list[Block] = []
    for setting in report.meta.settings:
        blocks += [
            Block(kind="h3", text=setting),
            _judge_wide(report, setting),
            Block(kind="plots", plots=_scatters(report, setting)),
        ]
    pairs_swaps = [r for r in report.rank_swaps if r.comparison == "judges"]
    blocks += [
        table_block("judge_pairs", report.judge_pairs),
        table_block("leniency", report.leniency),
        table_block("self_preference", report.self_preference),
        table_block("check_agreement", report.check_agreement)
        if report.check_agreement
        else _note("Per-check agreement needs verdicts.jsonl."),
        *(
            [table_block("reference_agreement", report.reference_agreement)]
            if report.reference_agreement
            else []
        ),
        table_block("rank_swaps", pairs_swaps, drop=("comparison",), caption="Swapped pairs")
        if pairs_swaps
        else _note("No pair of judges orders any two models differently."),
        table_block("judge_gaps", report.judge_gaps, collapsed=True),
        table_block("families", report.families, collapsed=True),
    ]
    return Section("robustness", "Judge robustness", intro, blocks)


def _modality(report: Report) -> Section:
    intro = (
        "Table 3. Text-only minus multimodal (x100): what identifying the entity from the "
        "image costs each model. A constant gap (small spread, correlation with the "
        "multimodal score near 0) is a uniform tax; a ranking that survives has tau near 1."
    )
    if not report.modality:
        return Section("modality", "Modality", intro, [_note("The run lacks a setting.")])
    blocks: list[Block] = []
    for judge in report.meta.judges:
        rows = sorted(
            (r for r in report.modality if r.judge == judge), key=lambda r: -(r.multimodal or 0.0)
        )
        gaps = [Interval(r.model, _x100(r.gap), _x100(r.gap_low), _x100(r.gap_high)) for r in rows]
        title = f"Text-only minus multimodal: {judge}"
        chart = interval_chart(gaps, title, "gap (x100)", kind="modality", bars=True)
        blocks.append(Block(kind="plots", plots=[Markup(chart)]))
    swaps = [r for r in report.rank_swaps if r.comparison == "settings"]
    blocks += [
        table_block("modality", report.modality),
        table_block("modality_summary", report.modality_summary),
        table_block("rank_swaps", swaps, drop=("comparison",), caption="Swapped pairs")
        if swaps
        else _note("The two settings order every pair of models the same way."),
    ]
    return Section("modality", "Modality", intro, blocks)


def _diversity(report: Report) -> Section:
    intro = "Section 6. How varied the questions are: templates, near duplicates, clusters."
    blocks = [_note("Question diversity is not available for this run.")]
    if report.diversity_summary:
        blocks = [
            table_block("diversity_summary", report.diversity_summary),
            table_block("diversity_templates", report.diversity_templates),
            table_block("diversity_near_duplicates", report.diversity_near_duplicates)
            if report.diversity_near_duplicates
            else _note("No near-duplicate questions."),
            table_block("diversity_clusters", report.diversity_clusters),
        ]
    return Section("diversity", "Question diversity", intro, blocks)


def _calibrated(report: Report) -> Section | None:
    """The calibrated leaderboard of RUN_DIR/calibrated.json; None without one."""
    rows = report.calibrated
    if not rows:
        return None
    first = rows[0]
    intro = (
        f"{first.judge} on every answer, corrected by {first.calibrated_with} on "
        f"{first.sample_questions} of {first.n_questions} questions (gamut calibrate): "
        f"each interval ({round(100 * first.confidence)}%, Student's t) holds however wrong "
        f"the cheap judge is, if the sample was drawn at random before any verdict was seen. "
        "naive judge: the cheap judge alone; naive calibrated with: the strong judge's "
        "sample alone; width ratio: the interval's width over that sample's alone."
    )
    drop = ("judge", "calibrated_with", "confidence", "population", "n_questions",
            "sample_questions")  # fmt: skip
    blocks = [table_block("calibrated", rows, drop=drop)]
    chart = _width_chart(rows)
    if chart is not None:
        blocks.append(Block(kind="plots", plots=[chart]))
    return Section("calibrated", "Calibrated scores", intro, blocks)


def _width_chart(rows: Sequence[CalibratedRow]) -> Markup | None:
    """Expected interval width (x100) against the fraction of questions judged by the strong
    judge (``plan_widths``), from each row's residual spread as its interval implies it;
    None when no row gives one (a sample of every question, or fewer than 2)."""
    from gamut_eval.calibration import FRACTIONS, plan_widths, t_value

    widths: dict[float, list[float]] = {}
    for row in rows:
        n, total = row.n_calibration, row.n_answers
        if row.gamut_low is None or row.gamut_high is None or row.population != "finite":
            continue
        if not 2 <= n < total:
            continue
        # the interval is 2 t sqrt((1 - n / N) s^2 / n): its s, the residual spread
        half = (row.gamut_high - row.gamut_low) / 2
        sd = half / float(t_value(row.confidence, n - 1)) * math.sqrt(n / (1 - n / total))
        plan = plan_widths(total, FRACTIONS, sd=sd, correlation=0.0, confidence=row.confidence)
        for planned in plan:
            if planned.n_calibration >= 2:
                widths.setdefault(planned.fraction, []).append(100 * planned.width)
    if not widths:
        return None
    questions = rows[0].n_questions
    bars = [
        Interval(
            f"{100 * fraction:g}% ({math.ceil(fraction * questions - 1e-9)} questions)",
            sorted(values)[len(values) // 2],
            min(values),
            max(values),
        )
        for fraction, values in sorted(widths.items())
    ]
    title = "Expected interval width against the fraction of questions the strong judge grades"
    caption = "interval width (x100): median, narrowest to widest"
    chart = interval_chart(
        bars, title, caption, kind="calibration", bars=True, rows_caption="fraction"
    )
    return Markup(chart)


def _audit(report: Report) -> Section:
    intro = (
        "The latest adversarial audit of a judge: answers that say nothing must never pass a "
        "check, and injections, fake verdicts, fence escapes, padding or a new check order "
        "must not change verdicts."
    )
    if not report.judge_audit:
        note = (
            "No audit in this run folder: run "
            "`gamut audit-judge --judge J --out RUN_DIR/audit.json`"
        )
        return Section("audit", "Judge audit", intro, [_note(note)])
    return Section("audit", "Judge audit", intro, [table_block("judge_audit", report.judge_audit)])


def render_html(report: Report, run: RunData | None = None, *, explore: bool = True) -> str:
    """The report as one HTML file: no external resources, a strict CSP.

    With ``explore`` (the default) the page also holds the drill-down (every question,
    check, verdict, explanation and answer, as embedded JSON and the script that shows it),
    read from ``run`` or, without it, from the run folder the report names.
    """
    meta = report.meta
    summary = (
        f"{meta.questions} questions, {len(meta.models)} models, {len(meta.judges)} "
        f"judge(s), settings: {', '.join(meta.settings)}. Scores x100; intervals "
        f"[low, high] are {_pct(report)} bootstrap intervals ({meta.resamples} resamples, "
        f"seed {meta.seed})."
    )
    footer = (
        f"gamut-eval {meta.gamut_eval_version}, {meta.created_at}. Scoring: lambda "
        f"{meta.scoring.lam}, mu {meta.scoring.mu}. Intervals: {meta.interval_method}."
    )
    calibrated = _calibrated(report)
    sections = [
        _leaderboard(report),
        *([calibrated] if calibrated else []),
        _breakdowns(report),
        _robustness(report),
        _audit(report),
        _modality(report),
        _diversity(report),
    ]
    title = f"Gamut report: {meta.run_dir}" if meta.run_dir else "Gamut report"
    data, why = explore_json(report, run) if explore else (None, "")
    if data is None and why:
        sections.insert(0, Section("explore", "Explore", "", [_note(why[0].upper() + why[1:])]))
    return render_page(title, summary, meta.notes, sections, footer, data)
