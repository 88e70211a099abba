"""Analyses derived from stored results: agreement statistics, leaderboards, reports."""

from gamut_eval.analysis._agreement import accuracy, cohen_kappa, confusion_matrix

__all__ = ["accuracy", "cohen_kappa", "confusion_matrix"]
