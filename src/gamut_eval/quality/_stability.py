"""The same checks judged N times: how often a verdict flips, and how far the score moves.

Each repeat is a distinct run in a store of its own (``_verdicts``), so no repeat is served
from another's cache; the temperature is whatever the settings say.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import asdict
from pathlib import Path

from gamut_eval.analysis import cohen_kappa
from gamut_eval.dataset import Dataset
from gamut_eval.judge import JudgePlan, JudgeSettings, OnEvent
from gamut_eval.quality._verdicts import (
    ExecutorFactory,
    Frozen,
    Verdicts,
    judge_in_store,
    model_scores,
    require_judge_backend,
    store_directory,
    tier_and_kind_groups,
)
from gamut_eval.rubric import Check
from gamut_eval.scoring import ScoringParams


class FlippedCheck(Frozen):
    """A check whose verdict was not the same in every repeat."""

    question_id: str
    model: str
    setting: str
    """``multimodal`` or ``text_only``."""
    check_id: str
    verdicts: list[str]
    """The verdict of each repeat, in order."""


class PairKappa(Frozen):
    """Cohen's kappa between two repeats, on the checks both graded."""

    first: int
    """Repeat number (from 1)."""
    second: int
    """Repeat number (from 1), after ``first``."""
    kappa: float
    """1 when the two repeats agree on every check."""


class ScoreSpread(Frozen):
    """The mean Gamut score of one model and setting in each repeat, and its spread."""

    model: str
    setting: str
    """``multimodal`` or ``text_only``."""
    scores: list[float | None]
    """Per repeat (fractions in [-1, 1]); None where nothing was scored."""
    min: float | None
    """Lowest score over the repeats."""
    max: float | None
    """Highest score over the repeats."""
    std: float | None
    """Sample standard deviation (n - 1) over the repeats with a score; None below two."""


class StabilityReport(Frozen):
    """``gamut stability``: one judge, the same checks, N independent runs."""

    settings: JudgeSettings
    """The judge configuration (temperature included) every repeat used."""
    dataset: str
    """The dataset file."""
    responses: str
    """The answers judged in every repeat."""
    repeats: int
    """Independent runs made."""
    checks: int
    """(response, check) pairs judged in each repeat."""
    unscored: list[int]
    """Checks left unscored, per repeat."""
    compared: int
    """Checks with a verdict in every repeat: what the flip rates are computed over."""
    flip_rate: float | None
    """Share of compared checks whose verdict is not identical across the repeats."""
    flip_rate_by_tier: dict[str, float]
    """The same, per importance tier (tiers present only)."""
    flip_rate_by_kind: dict[str, float]
    """The same, per check kind (kinds present only)."""
    flipped: list[FlippedCheck]
    """Every check that flipped, in responses-file order."""
    pairwise_kappa: list[PairKappa]
    """Cohen's kappa for every pair of repeats."""
    mean_kappa: float | None
    """Mean of the pairwise kappas."""
    score_spread: list[ScoreSpread]
    """Per model and setting, sorted."""


def _pairwise(runs: list[Verdicts]) -> list[PairKappa]:
    pairs = []
    for (i, a), (j, b) in itertools.combinations(enumerate(runs, start=1), 2):
        refs = [r for r in a if a[r] is not None and b.get(r) is not None]
        if refs:
            kappa = cohen_kappa([a[r] for r in refs], [b[r] for r in refs])
            pairs.append(PairKappa(first=i, second=j, kappa=kappa))
    return pairs


def _spread(
    runs: list[Verdicts], dataset: Dataset, params: ScoringParams | None
) -> list[ScoreSpread]:
    checklists = dataset.checklists()
    per_run = [model_scores(run, checklists, params) for run in runs]
    spreads = []
    for model, setting in sorted(set().union(*per_run)):
        scores = [scores.get((model, setting)) for scores in per_run]
        present = [s for s in scores if s is not None]
        spreads.append(
            ScoreSpread(
                model=model,
                setting=setting,
                scores=scores,
                min=min(present, default=None),
                max=max(present, default=None),
                std=statistics.stdev(present) if len(present) > 1 else None,
            )
        )
    return spreads


def stability_report(
    runs: list[Verdicts],
    dataset: Dataset,
    settings: JudgeSettings,
    responses: Path,
    params: ScoringParams | None = None,
) -> StabilityReport:
    """Flip rates, kappas and score spreads of repeated runs over the same checks."""
    checks: dict[str, dict[str, Check]] = {q: c.by_id() for q, c in dataset.checklists().items()}
    everywhere = [r for r in runs[0] if all(run.get(r) is not None for run in runs)]
    flips = {r: len({run[r] for run in runs}) > 1 for r in everywhere}
    kappas = _pairwise(runs)
    by_tier, by_kind = tier_and_kind_groups(flips, checks)
    return StabilityReport(
        settings=settings,
        dataset=str(dataset.path),
        responses=str(responses),
        repeats=len(runs),
        checks=len(runs[0]),
        unscored=[sum(v is None for v in run.values()) for run in runs],
        compared=len(everywhere),
        flip_rate=sum(flips.values()) / len(flips) if flips else None,
        flip_rate_by_tier={n: sum(flips[r] for r in g) / len(g) for n, g in by_tier.items()},
        flip_rate_by_kind={n: sum(flips[r] for r in g) / len(g) for n, g in by_kind.items()},
        flipped=[
            FlippedCheck(**asdict(r), verdicts=[str(run[r]) for run in runs])
            for r, flipped in flips.items()
            if flipped
        ],
        pairwise_kappa=kappas,
        mean_kappa=statistics.fmean(p.kappa for p in kappas) if kappas else None,
        score_spread=_spread(runs, dataset, params),
    )


def judge_stability(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    repeats: int,
    *,
    store_dir: Path | None = None,
    executor_factory: ExecutorFactory | None = None,
    on_event: OnEvent | None = None,
    params: ScoringParams | None = None,
) -> StabilityReport:
    """Judge every check of ``responses`` ``repeats`` times, each repeat a distinct run.

    Repeat i is judged into ``<store_dir>/repeat-<i>.sqlite`` (a temporary directory when
    ``store_dir`` is None): never served from another repeat's cache, and resumable on
    its own when the directory is kept.
    """
    if repeats < 2:
        raise ValueError(f"stability needs at least 2 repeats; got {repeats}")
    require_judge_backend(settings, executor_factory)
    plan = JudgePlan(dataset, responses, settings)
    runs = []
    with store_directory(store_dir) as directory:
        for i in range(1, repeats + 1):
            verdicts, _ = judge_in_store(
                plan,
                directory / f"repeat-{i}.sqlite",
                label=f"repeat {i}/{repeats}",
                executor_factory=executor_factory,
                on_event=on_event,
            )
            runs.append(verdicts)
    return stability_report(runs, dataset, settings, responses, params)
