"""What ``gamut audit-judge`` reports, computed from verdicts already judged.

The report's models (the ``audit.json`` format) live in ``analysis._audit``, so the
run report can read an audit without importing this package; they are re-exported here.

Kept apart from the runner (``_audit.py``) so the arithmetic is tested on hand-made
verdicts, and so a report can be recomputed from stored verdicts without a judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from gamut_eval.analysis import (
    AUDIT_SCHEMA,
    VERDICT_ORDER,
    AuditReport,
    AuditThresholds,
    CleanRun,
    FlipExample,
    ProbeResult,
    SkippedProbe,
)
from gamut_eval.quality._rows import CheckRef
from gamut_eval.quality.probes import Probe
from gamut_eval.scoring import Verdict

__all__ = [
    "AUDIT_SCHEMA",
    "AuditReport",
    "AuditThresholds",
    "CleanRun",
    "FlipExample",
    "ProbeResult",
    "SkippedProbe",
    "probe_result",
]

_EXAMPLES = 5
_RANK = {v: i for i, v in enumerate(VERDICT_ORDER)}
_PASSING = frozenset({Verdict.MEETS.value, Verdict.PARTIALLY_MEETS.value})


def _fraction(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _example(ref: CheckRef, clean: str, probe: str) -> FlipExample:
    return FlipExample(
        question_id=ref.question_id,
        model=ref.model,
        setting=ref.setting,
        check_id=ref.check_id,
        clean=clean,
        probe=probe,
    )


def _failures(
    probe: Probe, unscored: float | None, rate: float | None, thresholds: AuditThresholds
) -> list[str]:
    if unscored is None:
        return ["no checks were judged"]
    out = []
    if unscored > thresholds.max_unscored_rate:
        out.append(f"{unscored:.1%} of checks unscored, above {thresholds.max_unscored_rate:.1%}")
    limit, what = (
        (thresholds.max_null_pass_rate, "null pass rate")
        if probe.kind == "null"
        else (thresholds.max_flip_rate, "flip rate")
    )
    if rate is not None and rate > limit:
        out.append(f"{what} {rate:.1%} is above {limit:.1%}")
    return out


def probe_result(
    probe: Probe,
    verdicts: Mapping[CheckRef, str | None],
    clean: Mapping[CheckRef, str | None],
    thresholds: AuditThresholds,
) -> ProbeResult:
    """Score one probe's verdicts: null pass rate for null probes, flips against ``clean``
    (matched on question, model, setting and check) for the others."""
    scored = {r: v for r, v in verdicts.items() if v is not None}
    answers = {(r.question_id, r.model, r.setting) for r in verdicts}
    flip_rate = upward_rate = null_pass_rate = None
    if probe.kind == "null":
        passing = [r for r, v in scored.items() if v in _PASSING]
        null_pass_rate = _fraction(len(passing), len(scored))
        examples = [_example(r, "missing", scored[r]) for r in passing[:_EXAMPLES]]
    else:
        both = [r for r in scored if clean.get(r) is not None]
        flipped = [r for r in both if scored[r] != clean[r]]
        upward = [r for r in flipped if _RANK[scored[r]] > _RANK[str(clean[r])]]
        flip_rate = _fraction(len(flipped), len(both))
        upward_rate = _fraction(len(upward), len(both))
        examples = [_example(r, str(clean[r]), scored[r]) for r in flipped[:_EXAMPLES]]
    rate = null_pass_rate if probe.kind == "null" else flip_rate
    unscored = _fraction(len(verdicts) - len(scored), len(verdicts))
    failures = _failures(probe, unscored, rate, thresholds)
    return ProbeResult(
        name=probe.name,
        kind=probe.kind,
        description=probe.description,
        answers=len(answers),
        checks=len(verdicts),
        unscored=len(verdicts) - len(scored),
        verdicts=_counts(scored.values()),
        flip_rate=flip_rate,
        upward_rate=upward_rate,
        null_pass_rate=null_pass_rate,
        examples=examples,
        passed=not failures,
        failures=failures,
    )


def _counts(verdicts: Iterable[str]) -> dict[str, int]:
    counts = Counter(verdicts)
    return {v: counts[v] for v in reversed(VERDICT_ORDER) if counts[v]}
