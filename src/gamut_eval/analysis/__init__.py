"""Analyses derived from stored results: agreement statistics, leaderboards, reports."""

from gamut_eval.analysis._agreement import accuracy, cohen_kappa, confusion_matrix
from gamut_eval.analysis._bootstrap import Bootstrap, resample_weights
from gamut_eval.analysis._export import FORMATS, write_report
from gamut_eval.analysis._families import load_families, model_family
from gamut_eval.analysis._rank import kendall_tau_b
from gamut_eval.analysis._render_html import render_html
from gamut_eval.analysis._render_md import render_markdown
from gamut_eval.analysis._report import (
    TABLES,
    Report,
    ReportConfig,
    ReportMeta,
    build_report,
    report_for_run,
)
from gamut_eval.analysis._rundata import RunData, load_run
from gamut_eval.analysis._synthetic import synthetic_run

__all__ = [
    "FORMATS",
    "TABLES",
    "Bootstrap",
    "Report",
    "ReportConfig",
    "ReportMeta",
    "RunData",
    "accuracy",
    "build_report",
    "cohen_kappa",
    "confusion_matrix",
    "kendall_tau_b",
    "load_families",
    "load_run",
    "model_family",
    "render_html",
    "render_markdown",
    "report_for_run",
    "resample_weights",
    "synthetic_run",
    "write_report",
]
