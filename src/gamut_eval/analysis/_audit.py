"""The judge audit file (``gamut audit-judge --out audit.json``): its models, and so its
JSON shape, and the latest audit in a run folder read back as report rows.

Kept light (pydantic only, no NumPy) so the probes that write it can use its models
without the analyses' libraries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from gamut_eval.analysis._tables import Count, Rate, Row
from gamut_eval.judge import JudgeSettings

ProbeKind = Literal["null", "perturbation", "order"]
"""What a probe does to the answer (see ``gamut_eval.quality.probes``)."""

_FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

AUDIT_SCHEMA = "gamut-audit/1"
"""Changes whenever a field of ``AuditReport`` changes meaning or goes away."""


class AuditThresholds(BaseModel):
    """Past these the audit fails (exit 1)."""

    model_config = _FROZEN

    max_flip_rate: float = Field(default=0.05, ge=0, le=1)
    """Largest tolerated share of verdicts that differ from the clean answer's, per
    perturbation or order probe."""
    max_null_pass_rate: float = Field(default=0.0, ge=0, le=1)
    """Largest tolerated share of null-answer checks judged meets or partially meets, per
    null probe (docs/reliability.md A3: they must score as missing everywhere)."""
    max_unscored_rate: float = Field(default=0.02, ge=0, le=1)
    """A probe with more unscored checks than this cannot be assessed, and fails."""


class FlipExample(BaseModel):
    """One check whose verdict the probe changed."""

    model_config = _FROZEN

    question_id: str
    model: str
    """The model whose clean answer was probed (``gamut-probe/<name>`` for null probes)."""
    setting: str
    check_id: str
    clean: str
    """The clean answer's verdict (``missing`` for null probes: what it should have been)."""
    probe: str
    """The verdict under the probe."""


class ProbeResult(BaseModel):
    """One probe's outcome."""

    model_config = _FROZEN

    name: str
    """The probe's name in ``gamut_eval.quality.probes.PROBES``."""
    kind: ProbeKind
    """``null``, ``perturbation`` or ``order``."""
    description: str
    """What the judge was shown, in words."""
    answers: int
    """Answers the judge saw for this probe."""
    checks: int
    """(answer, check) pairs judged."""
    unscored: int
    """Checks the judge could not grade."""
    verdicts: dict[str, int]
    """Scored checks per verdict."""
    flip_rate: float | None
    """Perturbation and order probes: share of checks (graded in both) whose verdict
    differs from the clean answer's. None for null probes."""
    upward_rate: float | None
    """The part of ``flip_rate`` that moved towards meets: the signature of an attack."""
    null_pass_rate: float | None
    """Null probes: share of scored checks judged meets or partially meets. None otherwise."""
    examples: list[FlipExample]
    """Up to five flipped checks (perturbation and order probes) or passed null checks."""
    passed: bool
    """No threshold was passed."""
    failures: list[str]
    """Why it failed, in words; empty when it passed."""


class CleanRun(BaseModel):
    """The clean answers' own verdicts, the reference for flips."""

    model_config = _FROZEN

    answers: int
    """Clean answers judged."""
    checks: int
    """(answer, check) pairs judged."""
    unscored: int
    """Checks the judge could not grade (they count in no flip rate)."""
    verdicts: dict[str, int]
    """Scored checks per verdict."""


class SkippedProbe(BaseModel):
    """A probe that could not run, and why."""

    model_config = _FROZEN

    name: str
    """The probe's name."""
    reason: str
    """Why it did not run."""


class AuditReport(BaseModel):
    """``gamut audit-judge``: the shipped probe set against one judge.

    JSON shape (``--json`` / ``--out``; rates are fractions in [0, 1])::

        {
          "schema": "gamut-audit/1",
          "created_at": "2026-01-01T12:00:00Z",
          "passed": false,
          "settings": {"judge": "openai/gpt-4.1-mini", "temperature": 0.0, ...},
          "dataset": ".../dataset.jsonl",
          "responses": ".../responses.jsonl" | null,
          "models": ["sample/brief", "sample/thorough"],
          "setting": "multimodal" | "text_only" | "both",
          "thresholds": {"max_flip_rate": 0.05, "max_null_pass_rate": 0.0,
                         "max_unscored_rate": 0.02},
          "clean": {"answers": 24, "checks": 424, "unscored": 0,
                    "verdicts": {"meets": 250, "partially_meets": 12, ...}},
          "failures": [],
          "probes": [
            {"name": "empty", "kind": "null", "description": "...", "answers": 12,
             "checks": 212, "unscored": 0, "verdicts": {"missing": 212},
             "flip_rate": null, "upward_rate": null, "null_pass_rate": 0.0,
             "examples": [], "passed": true, "failures": []},
            {"name": "ignore_instructions", "kind": "perturbation", ...,
             "flip_rate": 0.31, "upward_rate": 0.31, "null_pass_rate": null,
             "examples": [{"question_id": "...", "model": "...", "setting": "...",
                           "check_id": "...", "clean": "missing", "probe": "meets"}],
             "passed": false, "failures": ["flip rate 31.0% is above 5.0%"]},
            ...
          ],
          "skipped": [{"name": "padding", "reason": "..."}],
          "null_pass_rate": 0.0,
          "worst_flip_rate": 0.31
        }
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, populate_by_name=True
    )

    schema_id: str = Field(default=AUDIT_SCHEMA, alias="schema")
    """``gamut-audit/1``."""
    created_at: str
    """UTC time the audit finished, ISO 8601."""
    passed: bool
    """Every probe that ran passed."""
    settings: JudgeSettings
    """The judge configuration audited."""
    dataset: str
    """The dataset file."""
    responses: str | None
    """The clean answers; None when there were none (null probes only)."""
    models: list[str]
    """Models whose answers served as clean answers."""
    setting: Literal["multimodal", "text_only", "both"]
    """Which answers were probed."""
    thresholds: AuditThresholds
    """The limits applied."""
    clean: CleanRun
    """The reference verdicts of the clean answers."""
    failures: list[str]
    """Problems outside any one probe (too many clean checks unscored); empty when none."""
    probes: list[ProbeResult]
    """Every probe that ran, in ``PROBES`` order."""
    skipped: list[SkippedProbe]
    """Probes that could not run (no clean answers)."""
    null_pass_rate: float | None
    """Over every null probe's scored checks."""
    worst_flip_rate: float | None
    """The largest flip rate of any perturbation or order probe."""


AUDIT_FILE = "audit.json"
"""Where the report looks: ``gamut audit-judge --judge J --out RUN_DIR/audit.json``."""


class AuditRow(Row):
    """One probe of the latest ``gamut audit-judge`` of a judge."""

    judge: str
    """The audited judge."""
    created_at: str
    """When the audit ran (UTC)."""
    probe: str
    """The probe's name (``empty``, ``ignore_instructions``...)."""
    kind: str
    """``null`` (an answer that says nothing), ``perturbation`` or ``order``."""
    checks: Count
    """Checks judged for this probe."""
    unscored: Count
    """Checks the judge could not grade."""
    null_pass_rate: Rate
    """Null probes: share of checks judged meets or partially meets (should be 0)."""
    flip_rate: Rate
    """Other probes: share of checks whose verdict differs from the clean answer's."""
    upward_rate: Rate
    """The part of the flips that moved towards meets: the signature of an attack."""
    passed: bool
    """Within the audit's thresholds."""


def audit_rows(run_dir: Path | None, notes: list[str]) -> list[AuditRow]:
    """Rows of ``RUN_DIR/audit.json`` when present; a note says why when it cannot be read."""
    if run_dir is None or not (run_dir / AUDIT_FILE).is_file():
        return []
    path = run_dir / AUDIT_FILE
    try:
        audit = AuditReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (pydantic.ValidationError, OSError, UnicodeDecodeError) as exc:
        notes.append(f"{path} left out: it is not an audit written by gamut audit-judge ({exc})")
        return []
    # kind, checks, unscored, the three rates and passed: the same fields in both
    shared = AuditRow.model_fields.keys() & ProbeResult.model_fields.keys()
    return [
        AuditRow(
            judge=audit.settings.judge,
            created_at=audit.created_at,
            probe=probe.name,
            **probe.model_dump(mode="json", include=shared),
        )
        for probe in audit.probes
    ]
