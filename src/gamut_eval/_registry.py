"""What gamut-eval registers with Inspect AI (the ``inspect_ai`` entry point).

    inspect eval gamut_eval/gamut --model M -T dataset=sample -T judge=J -T setting=text_only
    inspect score LOG.eval --scorer gamut_eval/gamut_scorer -S judge=J2 -S dataset=D

Importing this module imports Inspect AI; the rest of the package does so only on demand.
"""

from __future__ import annotations

import math

from inspect_ai import Task, task
from inspect_ai.scorer import Metric, SampleScore, Scorer, metric, scorer

from gamut_eval.generate._scorer import SCORE_KEYS, build_score_fn
from gamut_eval.generate._task import gamut_task

__all__ = ["gamut", "gamut_scorer", "scored_mean"]


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


@task
def gamut(
    dataset: str | None = None,
    setting: str = "multimodal",
    judge: str | None = None,
    judge_image: bool = False,
    store: str | None = None,
) -> Task:
    """The GAMUT benchmark (default: the bundled sample) in one setting."""
    return gamut_task(
        dataset=dataset, setting=setting, judge=judge, judge_image=judge_image, store=store
    )
