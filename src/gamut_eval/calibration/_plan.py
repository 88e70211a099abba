"""The planner: the interval width to expect at each calibration fraction, before paying.

From a small pilot (both judges' scores of a few answers) or a stated prior (the spread
of the strong judge's per-answer score and its correlation with the cheap judge's), the
expected width of a calibrated interval is the finite-population formula of
docs/method.md [P3] with the tuned weight: ``2 t sqrt((1 - n / N) s^2(y - lam f) / n)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gamut_eval.calibration._ppi import t_value
from gamut_eval.errors import InputError

FRACTIONS: tuple[float, ...] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0)
"""The fractions the planner shows by default."""

TARGET_WIDTH = 0.10
"""The interval width the planner recommends a fraction for by default: a model's
calibrated Gamut score known to within about 5 points (x100) either way."""


@dataclass(frozen=True)
class PlannedWidth:
    """The expected interval at one fraction."""

    fraction: float
    n_calibration: int
    """Questions in the sample: ``ceil(fraction * n_questions)``."""
    width: float
    """Expected width of the calibrated interval (score scale)."""
    strong_alone_width: float
    """Expected width from the strong judge's sample alone."""


def _pilot(y: npt.ArrayLike, f: npt.ArrayLike) -> tuple[float, float]:
    """Residual and strong variances from a pilot's pairs (NaN pairs left out)."""
    strong = np.asarray(y, dtype=np.float64)
    cheap = np.asarray(f, dtype=np.float64)
    keep = ~np.isnan(strong) & ~np.isnan(cheap)
    strong, cheap = strong[keep], cheap[keep]
    if len(strong) < 3:
        raise InputError(f"a pilot needs at least 3 answers both judges scored, got {len(strong)}")
    var_y = float(np.var(strong, ddof=1))
    var_f = float(np.var(cheap, ddof=1))
    cov = float(np.cov(strong, cheap)[0, 1])
    lam = min(max(cov / var_f, 0.0), 1.0) if var_f > 0 else 0.0
    return max(var_y - 2 * lam * cov + lam**2 * var_f, 0.0), var_y


def plan_widths(
    n_questions: int,
    fractions: Sequence[float] = FRACTIONS,
    *,
    pilot: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    sd: float | None = None,
    correlation: float | None = None,
    confidence: float = 0.95,
) -> list[PlannedWidth]:
    """Expected interval widths for a model's calibrated score at each fraction.

    Give ``pilot`` (the strong and the cheap judge's scores of the same answers), or a
    prior: ``sd``, the spread of the strong judge's per-answer score, and ``correlation``
    between the two judges' per-answer scores (the cheap score's spread taken equal).
    """
    if n_questions < 2:
        raise InputError(f"planning needs at least 2 questions, got {n_questions}")
    if pilot is not None:
        residual, strong = _pilot(*pilot)
    elif sd is not None and correlation is not None:
        if sd < 0 or not -1.0 <= correlation <= 1.0:
            raise InputError(
                f"the prior needs sd >= 0 and a correlation in [-1, 1], got {sd}, {correlation}"
            )
        weight = max(correlation, 0.0)
        strong = sd**2
        residual = sd**2 * (1 - 2 * weight * correlation + weight**2)
    else:
        raise InputError("give a pilot, or a prior: the score's sd and the judges' correlation")
    out = []
    for fraction in fractions:
        if not 0.0 < fraction <= 1.0:
            raise InputError(f"a calibration fraction must be in (0, 1], got {fraction!r}")
        n = min(math.ceil(fraction * n_questions - 1e-9), n_questions)
        quantile = float(t_value(confidence, max(n - 1, 0))) if n >= 2 else math.nan
        shrink = (1 - n / n_questions) / n
        out.append(
            PlannedWidth(
                fraction=fraction,
                n_calibration=n,
                width=2 * quantile * math.sqrt(shrink * residual),
                strong_alone_width=2 * quantile * math.sqrt(shrink * strong),
            )
        )
    return out


def recommend_fraction(
    planned: Sequence[PlannedWidth], target: float = TARGET_WIDTH
) -> PlannedWidth:
    """The smallest fraction whose expected width is at most ``target`` (the strong judge
    costs in proportion to the fraction, so the cheapest that is precise enough); the
    largest planned fraction when none is."""
    if not planned:
        raise InputError("no fraction to recommend from")
    ordered = sorted(planned, key=lambda row: row.fraction)
    for row in ordered:
        if row.width <= target:
            return row
    return ordered[-1]
