"""Modality (the paper's Table 3): text-only minus multimodal, per model and judge.

The text-only setting names the entity in the question, so a model's gain without the
image isolates what visual identification costs it. The paper's reading rests on three
numbers, each computed here with a bootstrap interval: the per-model gap, whether the
ranking survives removing the image (Kendall's tau-b between the two settings), and how
constant the gap is (its spread across models, and its correlation with the multimodal
score: near zero means a constant tax, negative means weak models gain most).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gamut_eval.analysis._bootstrap import Bootstrap, Means, nanmean
from gamut_eval.analysis._cube import ScoreCube
from gamut_eval.analysis._rank import kendall_tau_b, pearson
from gamut_eval.analysis._robustness import RankSwapRow, rank_swap_rows
from gamut_eval.analysis._tables import Count, Row, Score, Stat, number

__all__ = [
    "MULTIMODAL",
    "TEXT_ONLY",
    "ModalityRow",
    "ModalitySummaryRow",
    "gap_spread",
    "modality_tables",
]

FloatArray = npt.NDArray[np.float64]

MULTIMODAL = "multimodal"
TEXT_ONLY = "text_only"


class ModalityRow(Row):
    """One model's score with and without the image, by one judge."""

    judge: str
    """Judge model id."""
    model: str
    """Model id."""
    questions: Count
    """Questions scored in both settings."""
    multimodal: Score
    """Mean Gamut score with the image."""
    text_only: Score
    """Mean Gamut score with the entity named in text."""
    gap: Score
    """``text_only - multimodal``: what identifying the entity from the image costs."""
    gap_low: Score
    """Lower end of the bootstrap interval of ``gap`` (questions resampled in pairs)."""
    gap_high: Score
    """Upper end of that interval."""


class ModalitySummaryRow(Row):
    """Whether the ranking survives removing the image, and how constant the gap is."""

    judge: str
    """Judge model id."""
    models: Count
    """Models scored in both settings."""
    tau_b: Stat
    """Kendall's tau-b between the multimodal and the text-only ranking."""
    tau_b_low: Stat
    """Lower end of its bootstrap interval."""
    tau_b_high: Stat
    """Upper end of that interval."""
    swapped_pairs: Count
    """Pairs of models the two settings order differently (listed in ``rank_swaps``)."""
    gap_mean: Score
    """Mean gap over models."""
    gap_sd: Score
    """Standard deviation of the gap over models (n - 1): the spread of the tax."""
    gap_sd_low: Score
    """Lower end of the bootstrap interval of ``gap_sd``."""
    gap_sd_high: Score
    """Upper end of that interval."""
    gap_min: Score
    """Smallest per-model gap."""
    gap_max: Score
    """Largest per-model gap."""
    gap_corr: Stat
    """Pearson correlation across models between the gap and the multimodal score."""
    gap_corr_low: Stat
    """Lower end of the bootstrap interval of ``gap_corr``."""
    gap_corr_high: Stat
    """Upper end of that interval."""


def gap_spread(gaps: npt.ArrayLike) -> FloatArray:
    """Sample standard deviation (n - 1) over the last axis, NaNs left out; NaN below 2."""
    values = np.asarray(gaps, dtype=np.float64)
    valid = ~np.isnan(values)
    count = valid.sum(axis=-1)
    centred = np.where(valid, values - nanmean(values)[..., None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = (centred**2).sum(axis=-1) / (count - 1)
    return np.asarray(np.where(count >= 2, np.sqrt(variance), np.nan))


def modality_tables(
    cube: ScoreCube, means: Means, boot: Bootstrap
) -> tuple[list[ModalityRow], list[ModalitySummaryRow], list[RankSwapRow]]:
    """Per-model rows, one summary per judge, and the swapped pairs; empty unless the
    run has both the multimodal and the text-only setting."""
    mm, text = cube.setting_index(MULTIMODAL), cube.setting_index(TEXT_ONLY)
    if mm is None or text is None:
        return [], [], []
    rows: list[ModalityRow] = []
    summaries: list[ModalitySummaryRow] = []
    swaps: list[RankSwapRow] = []
    paired = ~np.isnan(cube.gamut[mm]) & ~np.isnan(cube.gamut[text])
    for j, judge in enumerate(cube.judges):
        point_mm, point_text = means.point[mm, j], means.point[text, j]
        boot_mm, boot_text = means.boot[:, mm, j], means.boot[:, text, j]
        gaps = point_text - point_mm
        gap_low, gap_high = boot.interval(boot_text - boot_mm)
        order = np.argsort(-np.nan_to_num(point_mm, nan=-np.inf), kind="stable")
        for m in (m for m in order if not np.isnan(gaps[m])):
            rows.append(
                ModalityRow(
                    judge=judge,
                    model=cube.models[m],
                    questions=int(paired[j, m].sum()),
                    multimodal=number(point_mm[m]),
                    text_only=number(point_text[m]),
                    gap=number(gaps[m]),
                    gap_low=number(gap_low[m]),
                    gap_high=number(gap_high[m]),
                )
            )
        names = (MULTIMODAL, TEXT_ONLY)
        judge_swaps = rank_swap_rows("settings", judge, names, point_mm, point_text, cube.models)
        swaps.extend(judge_swaps)
        summaries.append(
            _summary(judge, (point_mm, point_text), (boot_mm, boot_text), boot, len(judge_swaps))
        )
    return rows, summaries, swaps


def _summary(
    judge: str,
    point: tuple[FloatArray, FloatArray],
    resampled: tuple[FloatArray, FloatArray],
    boot: Bootstrap,
    swapped: int,
) -> ModalitySummaryRow:
    gaps = point[1] - point[0]
    boot_gaps = resampled[1] - resampled[0]
    defined = gaps[~np.isnan(gaps)]
    tau_b_low, tau_b_high = boot.interval(kendall_tau_b(*resampled))
    sd_low, sd_high = boot.interval(gap_spread(boot_gaps))
    corr_low, corr_high = boot.interval(pearson(boot_gaps, resampled[0]))
    return ModalitySummaryRow(
        judge=judge,
        models=len(defined),
        tau_b=number(kendall_tau_b(*point)),
        tau_b_low=number(tau_b_low),
        tau_b_high=number(tau_b_high),
        swapped_pairs=swapped,
        gap_mean=number(nanmean(gaps)),
        gap_sd=number(gap_spread(gaps)),
        gap_sd_low=number(sd_low),
        gap_sd_high=number(sd_high),
        gap_min=number(defined.min()) if len(defined) else None,
        gap_max=number(defined.max()) if len(defined) else None,
        gap_corr=number(pearson(gaps, point[0])),
        gap_corr_low=number(corr_low),
        gap_corr_high=number(corr_high),
    )
