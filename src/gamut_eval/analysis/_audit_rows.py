"""The latest judge audit in a run folder (``audit.json``), as report rows."""

from __future__ import annotations

from pathlib import Path

import pydantic

from gamut_eval.analysis._audit_file import AuditReport
from gamut_eval.analysis._tables import Count, Rate, Row

__all__ = ["AUDIT_FILE", "AuditRow", "audit_rows"]

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
    return [
        AuditRow(
            judge=audit.settings.judge,
            created_at=audit.created_at,
            probe=probe.name,
            kind=probe.kind,
            checks=probe.checks,
            unscored=probe.unscored,
            null_pass_rate=probe.null_pass_rate,
            flip_rate=probe.flip_rate,
            upward_rate=probe.upward_rate,
            passed=probe.passed,
        )
        for probe in audit.probes
    ]
