"""The Gamut scorer as registered with Inspect AI (``gamut_eval/gamut_scorer``).

Importing this module imports Inspect AI: the package imports it only on demand, and
``_inspect_entry`` (Inspect's entry point) re-exports it beside the task.

Its metrics, per score key, are Inspect's ``mean()`` and ``stderr()`` over the samples
that have a value, registered as ``gamut_eval/mean`` and ``gamut_eval/stderr``: a NaN
value (nothing could be scored, or a tier without checks) is left out rather than making
the whole column NaN, so a judge failure never counts as a model failure. Values are
rounded to ``_scorer.SHOWN_DIGITS`` places.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Scorer,
    mean as inspect_mean,
    metric,
    scorer,
    stderr as inspect_stderr,
)

from gamut_eval.generate._scorer import SCORE_KEYS, build_score_fn, shown


def _over_finite(inner: Metric) -> Metric:
    """``inner`` over the samples that have a value (NaN left out), rounded; NaN when
    none has."""

    def compute(scores: list[SampleScore]) -> float:
        kept = [s for s in scores if math.isfinite(s.score.as_float())]
        return shown(float(inner(kept))) if kept else math.nan

    return compute


@metric
def mean() -> Metric:
    """Inspect's ``mean()`` over the samples that have a value, rounded."""
    return _over_finite(inspect_mean())


@metric
def stderr() -> Metric:
    """Inspect's ``stderr()`` (the sample standard deviation over the square root of n)
    over the samples that have a value, rounded."""
    return _over_finite(inspect_stderr())


@metric
def scored_mean() -> Metric:
    """Mean over the samples that have a value; NaN (nothing could be scored) is left out,
    so a judge failure never counts as a model failure. (Earlier logs' metric: kept so
    they can be scored again; new scores use ``mean`` and ``stderr``.)"""

    def compute(scores: list[SampleScore]) -> float:
        values = [s.score.as_float() for s in scores]
        finite = [v for v in values if math.isfinite(v)]
        return sum(finite) / len(finite) if finite else math.nan

    return compute


@scorer(metrics={key: [mean(), stderr()] for key in SCORE_KEYS})
def gamut_scorer(
    judge: str,
    dataset: str | None = None,
    judge_image: bool = False,
    store: str | None = None,
    backend: str = "auto",
    concurrency: int = 16,
) -> Scorer:
    """Judge every check of the answer independently and score it (Gamut score and each
    tier, in [-1, 1]); every check's verdict is kept in the score's metadata."""
    return build_score_fn(judge, dataset, judge_image, store, backend, concurrency)
