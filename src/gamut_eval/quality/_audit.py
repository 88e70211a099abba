"""Running the probe set against a judge, and what ``gamut audit-judge`` reports.

Two judge runs, each in a store of its own (``_verdicts``): one with the clean answers,
every null probe and every perturbation in a single responses file (one executor, full
concurrency, and each answer text is distinct so nothing is served twice), and one with
the clean answers again under reversed check order, which sends byte-identical requests
and so must not share the first run's cache.

The report is computed from verdicts already judged (``probe_result``), so its arithmetic
is tested on hand-made verdicts and a report can be recomputed from stored verdicts without
a judge. The report's models (the ``audit.json`` format) live in ``analysis._audit``,
so the run report can read an audit without importing this package; they are re-exported
here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from gamut_eval._files import atomic_writer
from gamut_eval.analysis import (
    AUDIT_SCHEMA as AUDIT_SCHEMA,
    VERDICT_ORDER,
    AuditReport as AuditReport,
    AuditThresholds as AuditThresholds,
    CleanRun as CleanRun,
    FlipExample as FlipExample,
    ProbeResult as ProbeResult,
    SkippedProbe as SkippedProbe,
)
from gamut_eval.dataset import Dataset
from gamut_eval.errors import InputError
from gamut_eval.judge import JudgePlan, JudgeSettings, OnEvent
from gamut_eval.quality._verdicts import (
    CheckRef,
    ExecutorFactory,
    Verdicts,
    judge_in_store,
    require_judge_backend,
    store_directory,
)
from gamut_eval.quality.probes import PROBES, Probe
from gamut_eval.responses import ResponseRow, check_responses, iter_responses
from gamut_eval.scoring import Verdict

_EXAMPLES = 5
_RANK = {v: i for i, v in enumerate(VERDICT_ORDER)}
_PASSING = frozenset({Verdict.MEETS.value, Verdict.PARTIALLY_MEETS.value})


def _fraction(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _example(ref: CheckRef, clean: str, probe: str) -> FlipExample:
    return FlipExample(**asdict(ref), clean=clean, probe=probe)


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
        examples = [_example(r, Verdict.MISSING.value, scored[r]) for r in passing[:_EXAMPLES]]
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


Setting = Literal["multimodal", "text_only", "both"]
CLEAN = "clean"


@dataclass(frozen=True, slots=True)
class _Tag:
    """What a row of the combined responses file stands for."""

    probe: str
    """A probe name, or ``clean``."""
    model: str
    """The model the verdicts are reported under."""


def clean_answers(
    dataset: Dataset, responses: Path, models: Sequence[str] = (), setting: Setting = "both"
) -> list[ResponseRow]:
    """The validated answers of ``models`` (all when empty) in ``setting``."""
    check_responses(responses, set(dataset.by_id()))
    rows = [
        row
        for _, row in iter_responses(responses)
        if (not models or row.model in models) and setting in ("both", row.setting)
    ]
    if not rows:
        wanted = ", ".join(models) or "any model"
        raise InputError(f"{responses}: no answers of {wanted} in setting {setting!r} to probe")
    return rows


def _row(question_id: str, model: str, setting: str, response: str) -> dict[str, Any]:
    return {"question_id": question_id, "model": model, "setting": setting, "response": response}


def _probe_rows(
    dataset: Dataset, clean: list[ResponseRow], probes: Iterable[Probe]
) -> tuple[list[dict[str, Any]], dict[str, _Tag]]:
    """The combined responses file, and the tag of each of its model names."""
    rows = [_row(r.question_id, r.model, r.setting, r.response) for r in clean]
    tags = {r.model: _Tag(CLEAN, r.model) for r in clean}
    settings = sorted({r.setting for r in clean}) or ["multimodal"]
    for probe in probes:
        if probe.kind == "null":
            name = f"gamut-probe/{probe.name}"
            tags[name] = _Tag(probe.name, name)
            rows += [
                _row(qid, name, setting, probe.answer)
                for qid in dataset.by_id()
                for setting in settings
            ]
        elif probe.kind == "perturbation":
            for r in clean:
                name = f"gamut-probe/{probe.name}/{r.model}"
                tags[name] = _Tag(probe.name, r.model)
                rows.append(_row(r.question_id, name, r.setting, probe.apply(r.response)))
    return rows, tags


def _split(verdicts: Verdicts, tags: dict[str, _Tag]) -> dict[str, Verdicts]:
    """Combined-run verdicts per probe (and ``clean``), under the reported model names."""
    out: dict[str, Verdicts] = {}
    for ref, verdict in verdicts.items():
        tag = tags[ref.model]
        key = CheckRef(ref.question_id, tag.model, ref.setting, ref.check_id)
        out.setdefault(tag.probe, {})[key] = verdict
    return out


def _reversed(dataset: Dataset) -> Dataset:
    """The dataset with every checklist's checks in reverse order (ids and texts kept)."""
    checklists = dataset.checklists()
    records = tuple(
        record.model_copy(
            update={
                "checklist": checklists[record.id].model_copy(
                    update={"checks": tuple(reversed(checklists[record.id].checks))}
                )
            }
        )
        for record in dataset
    )
    return Dataset(path=dataset.path, records=records)


_Judge = Callable[[Dataset, list[dict[str, Any]], str], Verdicts]
"""Judges the rows (a responses file's) against the dataset, in a store of the name's own."""


def _judge_all(
    dataset: Dataset, judge: _Judge, clean: list[ResponseRow], probes: list[Probe]
) -> dict[str, Verdicts]:
    """Verdicts per probe name, and of the clean answers under ``clean``."""
    rows, tags = _probe_rows(dataset, clean, probes)
    verdicts = _split(judge(dataset, rows, "probes"), tags)
    for probe in probes:
        verdicts.setdefault(probe.name, {})
    orders = [p for p in probes if p.kind == "order"]
    if orders:
        again = [_row(r.question_id, r.model, r.setting, r.response) for r in reversed(clean)]
        reordered = judge(_reversed(dataset), again, "reordered")
        verdicts.update(dict.fromkeys((p.name for p in orders), reordered))
    return verdicts


def _clean_run(verdicts: Verdicts, thresholds: AuditThresholds) -> tuple[CleanRun, list[str]]:
    scored = [v for v in verdicts.values() if v is not None]
    counts = dict(Counter(scored))
    unscored = len(verdicts) - len(scored)
    answers = len({(r.question_id, r.model, r.setting) for r in verdicts})
    run = CleanRun(answers=answers, checks=len(verdicts), unscored=unscored, verdicts=counts)
    failures = []
    if verdicts and unscored / len(verdicts) > thresholds.max_unscored_rate:
        failures.append(
            f"{unscored} of {len(verdicts)} clean checks unscored: flips cannot be measured"
        )
    return run, failures


def _null_pass_rate(results: list[ProbeResult]) -> float | None:
    nulls = [r for r in results if r.kind == "null"]
    scored = sum(r.checks - r.unscored for r in nulls)
    passing = sum(
        r.verdicts.get(Verdict.MEETS, 0) + r.verdicts.get(Verdict.PARTIALLY_MEETS, 0) for r in nulls
    )
    return passing / scored if scored else None


def audit_judge(
    dataset: Dataset,
    settings: JudgeSettings,
    *,
    responses: Path | None = None,
    models: Sequence[str] = (),
    setting: Setting = "multimodal",
    thresholds: AuditThresholds | None = None,
    probes: Sequence[Probe] = PROBES,
    store_dir: Path | None = None,
    executor_factory: ExecutorFactory | None = None,
    on_event: OnEvent | None = None,
) -> AuditReport:
    """Run ``probes`` against the judge of ``settings``; the report says whether it passed.

    Clean answers are the ``responses`` of ``models`` in ``setting``; without responses
    only the null probes run (the others are listed as skipped). Stores and probe files go
    to ``store_dir`` (kept, so an interrupted audit resumes) or a temporary directory.
    """
    thresholds = thresholds or AuditThresholds(max_unscored_rate=settings.max_unscored_rate)
    clean = clean_answers(dataset, responses, models, setting) if responses else []
    runnable = [p for p in probes if clean or p.kind == "null"]
    skipped = [
        SkippedProbe(name=p.name, reason="no clean answers to perturb (no responses given)")
        for p in probes
        if p not in runnable
    ]
    require_judge_backend(settings, executor_factory)
    with store_directory(store_dir) as directory:

        def judge(data: Dataset, rows: list[dict[str, Any]], name: str) -> Verdicts:
            path = directory / f"{name}.jsonl"
            with atomic_writer(path) as handle:
                handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            verdicts, _ = judge_in_store(
                JudgePlan(data, path, settings),
                directory / f"{name}.sqlite",
                label=f"audit: {name}",
                executor_factory=executor_factory,
                on_event=on_event,
            )
            return verdicts

        by_probe = _judge_all(dataset, judge, clean, runnable)
    reference = by_probe.get(CLEAN, {})
    results = [probe_result(p, by_probe[p.name], reference, thresholds) for p in runnable]
    clean_run, failures = _clean_run(reference, thresholds)
    flips = [r.flip_rate for r in results if r.flip_rate is not None]
    return AuditReport(
        created_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        passed=not failures and all(r.passed for r in results),
        settings=settings,
        dataset=str(dataset.path),
        responses=str(responses) if responses else None,
        models=sorted({r.model for r in clean}),
        setting=setting,
        thresholds=thresholds,
        clean=clean_run,
        failures=failures,
        probes=results,
        skipped=skipped,
        null_pass_rate=_null_pass_rate(results),
        worst_flip_rate=max(flips, default=None),
    )
