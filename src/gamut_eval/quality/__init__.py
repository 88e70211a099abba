"""Judge quality: agreement with labels, stability across repeats, adversarial probes.

Three questions a user should answer before trusting a judge's scores:

- ``agreement_report``: does it agree with people? (``gamut agreement``)
- ``judge_stability``: does it agree with itself? (``gamut stability``)
- ``audit_judge``: can an answer game it? (``gamut audit-judge``, probes in ``probes``)
"""

from gamut_eval.quality._agreement_report import (
    AgreementReport,
    BootstrapConfig,
    GroupAgreement,
    Matching,
    ScoreShift,
    agreement_report,
)
from gamut_eval.quality._audit import Setting, audit_judge, clean_answers
from gamut_eval.quality._audit_report import (
    AUDIT_SCHEMA,
    AuditReport,
    AuditThresholds,
    CleanRun,
    FlipExample,
    ProbeResult,
    SkippedProbe,
    probe_result,
)
from gamut_eval.quality._judging import ExecutorFactory
from gamut_eval.quality._offline_fit import PartAgreement, fit_meets_at, offline_agreement
from gamut_eval.quality._rows import CheckRef, Verdicts, load_verdicts, model_scores
from gamut_eval.quality._stability import (
    FlippedCheck,
    PairKappa,
    ScoreSpread,
    StabilityReport,
    judge_stability,
    stability_report,
)
from gamut_eval.quality.probes import PROBES, Probe, ProbeKind, probe_by_name

__all__ = [
    "AUDIT_SCHEMA",
    "PROBES",
    "AgreementReport",
    "AuditReport",
    "AuditThresholds",
    "BootstrapConfig",
    "CheckRef",
    "CleanRun",
    "ExecutorFactory",
    "FlipExample",
    "FlippedCheck",
    "GroupAgreement",
    "Matching",
    "PairKappa",
    "PartAgreement",
    "Probe",
    "ProbeKind",
    "ProbeResult",
    "ScoreShift",
    "ScoreSpread",
    "Setting",
    "SkippedProbe",
    "StabilityReport",
    "Verdicts",
    "agreement_report",
    "audit_judge",
    "clean_answers",
    "fit_meets_at",
    "judge_stability",
    "load_verdicts",
    "model_scores",
    "offline_agreement",
    "probe_by_name",
    "probe_result",
    "stability_report",
]
