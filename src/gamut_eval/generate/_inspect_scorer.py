"""The Gamut scorer as registered with Inspect AI (``gamut_eval/gamut_scorer``).

Importing this module imports Inspect AI: the package imports it only on demand, and
``_inspect_entry`` (Inspect's entry point) re-exports it beside the task.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Metric, SampleScore, Scorer, metric, scorer

from gamut_eval.generate._scorer import SCORE_KEYS, build_score_fn

__all__ = ["gamut_scorer", "scored_mean"]


@metric
def scored_mean() -> Metric:
    """Mean over the samples that have a value; NaN (nothing could be scored) is left out,
    so a judge failure never counts as a model failure."""

    def compute(scores: list[SampleScore]) -> float:
        values = [s.score.as_float() for s in scores]
        finite = [v for v in values if math.isfinite(v)]
        return sum(finite) / len(finite) if finite else math.nan

    return compute


@scorer(metrics={key: [scored_mean()] for key in SCORE_KEYS})
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
