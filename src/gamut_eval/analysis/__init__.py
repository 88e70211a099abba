"""Analyses derived from stored results: agreement statistics, leaderboards, reports."""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.analysis._audit import (
        AUDIT_SCHEMA as AUDIT_SCHEMA,
        AuditReport as AuditReport,
        AuditThresholds as AuditThresholds,
        CleanRun as CleanRun,
        FlipExample as FlipExample,
        ProbeKind as ProbeKind,
        ProbeResult as ProbeResult,
        SkippedProbe as SkippedProbe,
    )
    from gamut_eval.analysis._diversity import (
        DEFAULT_EMBEDDING_MODEL as DEFAULT_EMBEDDING_MODEL,
        question_diversity as question_diversity,
    )
    from gamut_eval.analysis._export import (
        FORMATS as FORMATS,
        default_output as default_output,
        render_markdown as render_markdown,
        render_table as render_table,
        render_text as render_text,
        write_report as write_report,
    )
    from gamut_eval.analysis._html import render_html as render_html
    from gamut_eval.analysis._rankings import (
        LeaderboardRow as LeaderboardRow,
        load_families as load_families,
        model_family as model_family,
    )
    from gamut_eval.analysis._report import (
        TABLES as TABLES,
        CalibratedRow as CalibratedRow,
        Report as Report,
        ReportConfig as ReportConfig,
        ReportMeta as ReportMeta,
        build_report as build_report,
        report_for_run as report_for_run,
    )
    from gamut_eval.analysis._rundata import RunData as RunData, load_run_data as load_run_data
    from gamut_eval.analysis._stats import (
        VERDICT_ORDER as VERDICT_ORDER,
        AgreementEstimates as AgreementEstimates,
        Bootstrap as Bootstrap,
        Estimate as Estimate,
        accuracy as accuracy,
        bootstrap_agreement as bootstrap_agreement,
        cohen_kappa as cohen_kappa,
        confusion_matrix as confusion_matrix,
        kendall_tau_b as kendall_tau_b,
        resample_weights as resample_weights,
    )
    from gamut_eval.analysis._tables import format_cell as format_cell
    from gamut_eval.analysis._view import (
        ReportServer as ReportServer,
        ensure_report as ensure_report,
        has_browser as has_browser,
        open_in_browser as open_in_browser,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
