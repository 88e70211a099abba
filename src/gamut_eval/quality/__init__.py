"""Judge quality: agreement with labels, stability across repeats, adversarial probes.

Three questions a user should answer before trusting a judge's scores:

- ``agreement_report``: does it agree with people? (``gamut agreement``)
- ``judge_stability``: does it agree with itself? (``gamut stability``)
- ``audit_judge``: can an answer game it? (``gamut audit-judge``, probes in ``probes``)
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.quality._agreement import (
        AgreementReport as AgreementReport,
        BootstrapConfig as BootstrapConfig,
        GroupAgreement as GroupAgreement,
        Matching as Matching,
        PartAgreement as PartAgreement,
        ScoreShift as ScoreShift,
        agreement_report as agreement_report,
        agreement_reports as agreement_reports,
        fit_meets_at as fit_meets_at,
        offline_agreement as offline_agreement,
        sample_labels as sample_labels,
    )
    from gamut_eval.quality._audit import (
        AUDIT_SCHEMA as AUDIT_SCHEMA,
        AuditReport as AuditReport,
        AuditThresholds as AuditThresholds,
        CleanRun as CleanRun,
        FlipExample as FlipExample,
        ProbeResult as ProbeResult,
        Setting as Setting,
        SkippedProbe as SkippedProbe,
        audit_judge as audit_judge,
        clean_answers as clean_answers,
        probe_result as probe_result,
    )
    from gamut_eval.quality._stability import (
        FlippedCheck as FlippedCheck,
        PairKappa as PairKappa,
        ScoreSpread as ScoreSpread,
        StabilityReport as StabilityReport,
        judge_stability as judge_stability,
        stability_report as stability_report,
    )
    from gamut_eval.quality._tables import (
        agreement_view as agreement_view,
        audit_view as audit_view,
        stability_view as stability_view,
    )
    from gamut_eval.quality._verdicts import (
        CheckRef as CheckRef,
        ExecutorFactory as ExecutorFactory,
        Verdicts as Verdicts,
        load_verdicts as load_verdicts,
        model_scores as model_scores,
    )
    from gamut_eval.quality.probes import (
        PROBES as PROBES,
        Probe as Probe,
        ProbeKind as ProbeKind,
        probe_by_name as probe_by_name,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
