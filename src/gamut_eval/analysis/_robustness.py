"""Judge robustness (the paper's Table 2): the same responses scored by several judges.

Does the ranking depend on the judge? For every pair of judges: Kendall's tau-b between
their rankings (with a bootstrap interval), the pairs of models they order differently
(and whether those are neighbours), and the per-model score gaps. For every judge: its
mean leniency offset (how much higher it scores than the other judges) and its
self-preference (how much more it favours its own family than the others do).

Every statistic is a function of the model means, so its interval comes from applying the
same function to the means under each bootstrap resample (shared across judges, so the
comparisons are paired by question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import numpy.typing as npt

from gamut_eval.analysis._bootstrap import Bootstrap, Means, nanmean
from gamut_eval.analysis._cube import ScoreCube
from gamut_eval.analysis._rank import kendall_tau_b, swapped_pairs
from gamut_eval.analysis._self_preference import (
    SelfPreferenceRow,
    reference_mean,
    self_preference_row,
)
from gamut_eval.analysis._tables import Count, Row, Score, Stat, number

__all__ = [
    "JudgeGapRow",
    "JudgePairRow",
    "JudgeScoreRow",
    "LeniencyRow",
    "RankSwapRow",
    "Robustness",
    "judge_robustness",
    "leniency_offset",
    "rank_swap_rows",
]

FloatArray = npt.NDArray[np.float64]


class JudgeScoreRow(Row):
    """One model's score by one judge, beside the other judges' (Table 2's cells)."""

    setting: str
    """Setting."""
    model: str
    """Model id."""
    judge: str
    """Judge model id."""
    gamut: Score
    """Mean Gamut score by this judge."""
    gamut_low: Score
    """Lower end of its bootstrap interval."""
    gamut_high: Score
    """Upper end of its bootstrap interval."""
    offset: Score
    """``gamut`` minus the mean of the other judges' scores for this model."""


class JudgePairRow(Row):
    """How two judges' rankings of the models agree."""

    setting: str
    """Setting."""
    judge_a: str
    """First judge (in the run's judge order)."""
    judge_b: str
    """Second judge."""
    models: Count
    """Models both judges scored."""
    tau_b: Stat
    """Kendall's tau-b between the two rankings (1: identical order)."""
    tau_b_low: Stat
    """Lower end of the bootstrap interval of ``tau_b``."""
    tau_b_high: Stat
    """Upper end of that interval."""
    swapped_pairs: Count
    """Pairs of models the two judges order differently (listed in ``rank_swaps``)."""
    adjacent_swaps: Count
    """Of those, pairs next to each other in both rankings."""
    mean_gap: Score
    """Mean over models of judge_a's score minus judge_b's."""
    max_abs_gap: Score
    """The largest absolute per-model gap."""
    max_gap_model: str | None
    """The model with that gap."""


class JudgeGapRow(Row):
    """One model's score under one judge minus under another."""

    setting: str
    """Setting."""
    model: str
    """Model id."""
    judge_a: str
    """First judge."""
    judge_b: str
    """Second judge."""
    gap: Score
    """judge_a's score minus judge_b's."""
    gap_low: Score
    """Lower end of the bootstrap interval of ``gap``."""
    gap_high: Score
    """Upper end of that interval."""
    largest: bool
    """Whether this is the largest absolute gap of this pair of judges in this setting."""


class RankSwapRow(Row):
    """Two models that two rankings order differently."""

    comparison: str
    """``judges`` (two judges, one setting) or ``settings`` (two settings, one judge)."""
    context: str
    """The setting (for ``judges``) or the judge (for ``settings``) held fixed."""
    ranking_a: str
    """The first ranking: a judge or a setting."""
    ranking_b: str
    """The second ranking."""
    higher_in_a: str
    """The model ranking a puts higher."""
    higher_in_b: str
    """The model ranking b puts higher."""
    gap_a: Score
    """By how much ``higher_in_a`` leads under ranking a."""
    gap_b: Score
    """By how much ``higher_in_b`` leads under ranking b."""
    adjacent: bool
    """Whether the two are next to each other in both rankings."""


class LeniencyRow(Row):
    """How much higher one judge scores than the other judges, on average over models."""

    setting: str
    """Setting."""
    judge: str
    """Judge model id."""
    models: Count
    """Models in the average."""
    offset: Score
    """Mean over models of (this judge's score - the mean of the other judges' scores)."""
    offset_low: Score
    """Lower end of the bootstrap interval of ``offset``."""
    offset_high: Score
    """Upper end of that interval."""
    offset_min: Score
    """Smallest per-model offset (a uniform leniency has min close to max)."""
    offset_max: Score
    """Largest per-model offset."""


@dataclass(frozen=True)
class Robustness:
    """The judge-robustness tables of a report (empty with fewer than two judges)."""

    judge_scores: list[JudgeScoreRow] = field(default_factory=list)
    judge_pairs: list[JudgePairRow] = field(default_factory=list)
    judge_gaps: list[JudgeGapRow] = field(default_factory=list)
    rank_swaps: list[RankSwapRow] = field(default_factory=list)
    leniency: list[LeniencyRow] = field(default_factory=list)
    self_preference: list[SelfPreferenceRow] = field(default_factory=list)


def leniency_offset(scores: FloatArray, judge: int) -> tuple[FloatArray, FloatArray]:
    """Per-model offsets ``(..., M)`` and their mean over models ``(...)``.

    ``scores`` is ``(..., J, M)``; the offset of model m is this judge's score minus the
    mean of the other judges' scores for m.
    """
    others = [k for k in range(scores.shape[-2]) if k != judge]
    per_model = scores[..., judge, :] - reference_mean(scores, others)
    return per_model, nanmean(per_model)


def rank_swap_rows(
    comparison: str,
    context: str,
    names: tuple[str, str],
    a: FloatArray,
    b: FloatArray,
    models: Sequence[str],
) -> list[RankSwapRow]:
    return [
        RankSwapRow(
            comparison=comparison,
            context=context,
            ranking_a=names[0],
            ranking_b=names[1],
            higher_in_a=models[p.higher_in_a],
            higher_in_b=models[p.higher_in_b],
            gap_a=number(a[p.higher_in_a] - a[p.higher_in_b]),
            gap_b=number(b[p.higher_in_b] - b[p.higher_in_a]),
            adjacent=p.adjacent,
        )
        for p in swapped_pairs(a.tolist(), b.tolist())
    ]


def judge_robustness(
    cube: ScoreCube, means: Means, boot: Bootstrap, families: Mapping[str, str]
) -> Robustness:
    """Every Table 2 analysis, per setting. ``families`` maps model and judge ids to
    families (``model_family``). Empty tables with fewer than two judges."""
    out = Robustness()
    if len(cube.judges) < 2:
        return out
    for s, setting in enumerate(cube.settings):
        point, resampled = means.point[s], means.boot[:, s]
        out.judge_scores.extend(_score_rows(cube, setting, point, resampled, boot))
        for a, b in combinations(range(len(cube.judges)), 2):
            _pair(cube, setting, (a, b), point, resampled, boot, out)
        for j in range(len(cube.judges)):
            out.leniency.append(_leniency_row(cube, setting, j, point, resampled, boot))
            out.self_preference.append(
                self_preference_row(cube, setting, j, point, resampled, boot, families)
            )
    return out


def _score_rows(
    cube: ScoreCube, setting: str, point: FloatArray, resampled: FloatArray, boot: Bootstrap
) -> list[JudgeScoreRow]:
    low, high = boot.interval(resampled)
    rows = []
    for j, judge in enumerate(cube.judges):
        offsets, _ = leniency_offset(point, j)
        for m, model in enumerate(cube.models):
            if not np.isnan(point[j, m]):
                rows.append(
                    JudgeScoreRow(
                        setting=setting,
                        model=model,
                        judge=judge,
                        gamut=number(point[j, m]),
                        gamut_low=number(low[j, m]),
                        gamut_high=number(high[j, m]),
                        offset=number(offsets[m]),
                    )
                )
    return rows


def _pair(
    cube: ScoreCube,
    setting: str,
    pair: tuple[int, int],
    point: FloatArray,
    resampled: FloatArray,
    boot: Bootstrap,
    out: Robustness,
) -> None:
    a, b = pair
    names = (cube.judges[a], cube.judges[b])
    tau_b_low, tau_b_high = boot.interval(kendall_tau_b(resampled[:, a], resampled[:, b]))
    gaps = point[a] - point[b]
    gap_low, gap_high = boot.interval(resampled[:, a] - resampled[:, b])
    both = ~np.isnan(gaps)
    largest = int(np.nanargmax(np.abs(gaps))) if both.any() else -1
    swaps = rank_swap_rows("judges", setting, names, point[a], point[b], cube.models)
    out.rank_swaps.extend(swaps)
    out.judge_pairs.append(
        JudgePairRow(
            setting=setting,
            judge_a=names[0],
            judge_b=names[1],
            models=int(both.sum()),
            tau_b=number(kendall_tau_b(point[a], point[b])),
            tau_b_low=number(tau_b_low),
            tau_b_high=number(tau_b_high),
            swapped_pairs=len(swaps),
            adjacent_swaps=sum(s.adjacent for s in swaps),
            mean_gap=number(nanmean(gaps)),
            max_abs_gap=number(abs(gaps[largest])) if largest >= 0 else None,
            max_gap_model=cube.models[largest] if largest >= 0 else None,
        )
    )
    out.judge_gaps.extend(
        JudgeGapRow(
            setting=setting,
            model=cube.models[m],
            judge_a=names[0],
            judge_b=names[1],
            gap=number(gaps[m]),
            gap_low=number(gap_low[m]),
            gap_high=number(gap_high[m]),
            largest=m == largest,
        )
        for m in np.flatnonzero(both)
    )


def _leniency_row(
    cube: ScoreCube,
    setting: str,
    j: int,
    point: FloatArray,
    resampled: FloatArray,
    boot: Bootstrap,
) -> LeniencyRow:
    per_model, offset = leniency_offset(point, j)
    low, high = boot.interval(leniency_offset(resampled, j)[1])
    defined = per_model[~np.isnan(per_model)]
    return LeniencyRow(
        setting=setting,
        judge=cube.judges[j],
        models=len(defined),
        offset=number(offset),
        offset_low=number(low),
        offset_high=number(high),
        offset_min=number(defined.min()) if len(defined) else None,
        offset_max=number(defined.max()) if len(defined) else None,
    )
