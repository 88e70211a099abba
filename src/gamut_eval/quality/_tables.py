"""Terminal tables of the three quality reports (rich renderables; the JSON is the record).

Scores are shown x100 as everywhere else in the project; rates as percentages.
"""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gamut_eval.analysis import VERDICT_ORDER, Estimate
from gamut_eval.quality._agreement import AgreementReport, GroupAgreement
from gamut_eval.quality._audit import AuditReport, ProbeResult
from gamut_eval.quality._stability import StabilityReport
from gamut_eval.scoring import Verdict

_SHORT: dict[str, str] = {
    Verdict.CONTRADICTS: "contra.",
    Verdict.MISSING: Verdict.MISSING.value,
    Verdict.PARTIALLY_MEETS: "partial",
    Verdict.MEETS: Verdict.MEETS.value,
}


def _plain(value: str) -> Text:
    """User data (model names, ids) as literal text: never read as rich markup."""
    return Text(value)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _score(value: float | None, sign: str = "") -> str:
    """x100, one decimal; ``sign="+"`` writes the sign of a positive value too."""
    return "—" if value is None else f"{100 * value:{sign}.1f}"


def _estimate(e: Estimate, digits: int = 2) -> str:
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def _agreement_row(table: Table, name: str, group: GroupAgreement) -> None:
    table.add_row(
        name,
        str(group.n),
        str(group.units),
        _estimate(group.accuracy),
        _estimate(group.cohen_kappa),
        _estimate(group.krippendorff_alpha),
    )


def _confusion(group: GroupAgreement) -> Table:
    table = Table(title="Confusion (rows: gold, columns: judge)", box=box.SIMPLE_HEAD)
    table.add_column("gold \\ judge")
    for label in VERDICT_ORDER:
        table.add_column(_SHORT[label], justify="right")
    for label, row in zip(VERDICT_ORDER, group.confusion, strict=True):
        table.add_row(_SHORT[label], *(str(n) for n in row))
    return table


def agreement_view(report: AgreementReport) -> RenderableType:
    """Statistics per group, the confusion matrix, and the score shift."""
    m, b = report.matching, report.bootstrap
    level = f"{100 * b.confidence:g}%"
    stats = Table(
        title=f"Judge vs gold ({level} intervals, {b.n_resamples} resamples of {b.unit})",
        box=box.SIMPLE_HEAD,
    )
    for column in ("group", "n", "qs", "accuracy", "Cohen's kappa", "alpha (ordinal)"):
        stats.add_column(column, justify="left" if column == "group" else "right")
    _agreement_row(stats, "all", report.overall)
    for title, groups in (("by tier", report.by_tier), ("by check kind", report.by_kind)):
        stats.add_section()
        stats.add_row(Text(title, style="dim"))
        for name, group in groups.items():
            _agreement_row(stats, name, group)
    shift = Table(
        title=f"Gamut score (x100): gold vs judge, on the {report.score_shift_answers} answers "
        "with a row for every check in both files",
        box=box.SIMPLE_HEAD,
    )
    for column in ("model", "setting", "gold", "judge", "judge - gold"):
        shift.add_column(column, justify="left" if column in ("model", "setting") else "right")
    for s in report.score_shift:
        shift.add_row(
            _plain(s.model), s.setting, _score(s.human), _score(s.judge), _score(s.difference, "+")
        )
    matching = Text(
        f"{m.compared} checks compared of {m.matched} matched; excluded as unscored: "
        f"{m.unscored_judge} by the judge, {m.unscored_gold} in gold; unmatched: "
        f"{m.only_judge} judge rows, {m.only_gold} gold rows. Mean |score shift|: "
        f"{_score(report.mean_abs_score_shift)} points"
        + (
            f" ({report.score_shift_left_out} answers lacking rows for some checks left out)."
            if report.score_shift_left_out
            else "."
        )
    )
    parts: list[RenderableType] = [stats, _confusion(report.overall), shift, matching]
    if report.judge is not None:
        parts.insert(0, Text(f"judge: {report.judge}", style="bold"))
    return Group(*parts)


def stability_view(report: StabilityReport, max_flipped: int = 20) -> RenderableType:
    """Flip rates, kappas between repeats, and the spread of each model's score."""
    kappa = "—" if report.mean_kappa is None else f"{report.mean_kappa:.3f}"
    summary = Text(
        f"{report.settings.judge}, temperature {report.settings.temperature:g}: "
        f"{report.repeats} repeats of {report.checks} checks ({report.compared} graded in "
        f"every repeat; unscored per repeat: {report.unscored}). Flip rate "
        f"{_pct(report.flip_rate)}; mean pairwise Cohen's kappa {kappa}."
    )
    rates = Table(title="Flip rate by tier and check kind", box=box.SIMPLE_HEAD)
    rates.add_column("group")
    rates.add_column("flip rate", justify="right")
    for name, rate in report.flip_rate_by_tier.items():
        rates.add_row(f"tier {name}", _pct(rate))
    rates.add_section()
    for name, rate in report.flip_rate_by_kind.items():
        rates.add_row(f"kind {name}", _pct(rate))
    spread = Table(title="Gamut score (x100) per repeat", box=box.SIMPLE_HEAD)
    for column in ("model", "setting", "scores", "min", "max", "std"):
        spread.add_column(column, justify="left" if column in ("model", "setting") else "right")
    for s in report.score_spread:
        scores = " ".join(_score(v) for v in s.scores)
        spread.add_row(
            _plain(s.model), s.setting, scores, _score(s.min), _score(s.max), _score(s.std)
        )
    parts: list[RenderableType] = [summary, rates, spread]
    if report.flipped:
        flipped = Table(
            title=f"Flipped checks (first {max_flipped} of {len(report.flipped)})",
            box=box.SIMPLE_HEAD,
        )
        for column in ("question", "model", "setting", "check", "verdicts"):
            flipped.add_column(column)
        for f in report.flipped[:max_flipped]:
            flipped.add_row(
                _plain(f.question_id), _plain(f.model), f.setting, f.check_id, " ".join(f.verdicts)
            )
        parts.append(flipped)
    return Group(*parts)


def _probe_row(table: Table, probe: ProbeResult) -> None:
    verdict = Text("pass", style="green") if probe.passed else Text("FAIL", style="red")
    table.add_row(
        probe.name,
        str(probe.checks),
        str(probe.unscored),
        _pct(probe.null_pass_rate),
        _pct(probe.flip_rate),
        _pct(probe.upward_rate),
        verdict,
    )


def audit_view(report: AuditReport) -> RenderableType:
    """One row per probe, then the outcome."""
    t = report.thresholds
    table = Table(
        title=f"Audit of {report.settings.judge} (max flip rate {_pct(t.max_flip_rate)}, "
        f"max null pass rate {_pct(t.max_null_pass_rate)})",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("probe", no_wrap=True)
    for column in ("checks", "unscored", "null pass", "flips", "upward"):
        table.add_column(column, justify="right")
    table.add_column("result")
    kind = None
    for probe in report.probes:
        if kind is not None and probe.kind != kind:
            table.add_section()
        kind = probe.kind
        _probe_row(table, probe)
    models = ", ".join(report.models) or "none"
    lines = [
        Text(
            f"clean answers: {report.clean.answers} ({models}), {report.clean.checks} checks, "
            f"{report.clean.unscored} unscored"
        )
    ]
    lines += [
        Text.assemble((f"{p.name}: ", "red"), "; ".join(p.failures))
        for p in report.probes
        if p.failures
    ]
    lines += [Text(f"skipped {s.name}: {s.reason}") for s in report.skipped]
    lines += [Text(failure, style="red") for failure in report.failures]
    outcome = ("PASSED", "green") if report.passed else ("FAILED", "red")
    lines.append(Text.assemble("audit ", outcome))
    return Group(table, *lines)
