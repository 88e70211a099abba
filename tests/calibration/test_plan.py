"""The planner: expected widths by hand, and against simulated reruns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gamut_eval.calibration import plan_widths, ppi_mean, recommend_fraction, t_value
from gamut_eval.errors import InputError


def test_prior_widths_by_hand() -> None:
    # sd 0.3, correlation 0.8: residual variance 0.09 * (1 - 0.64) = 0.0324.
    # 200 questions, a quarter: n = 50, (1 - 0.25) / 50 = 0.015.
    (row,) = plan_widths(200, [0.25], sd=0.3, correlation=0.8)
    t = float(t_value(0.95, 49))
    assert row.n_calibration == 50
    assert row.width == pytest.approx(2 * t * math.sqrt(0.015 * 0.0324))
    assert row.strong_alone_width == pytest.approx(2 * t * math.sqrt(0.015 * 0.09))
    # A useless cheap judge: the strong sample's width; every question sampled: no width.
    (useless,) = plan_widths(200, [0.25], sd=0.3, correlation=-0.5)
    assert useless.width == pytest.approx(useless.strong_alone_width)
    assert plan_widths(200, [1.0], sd=0.3, correlation=0.8)[0].width == 0.0


def test_widths_shrink_with_the_fraction() -> None:
    widths = [row.width for row in plan_widths(400, sd=0.3, correlation=0.7)]
    assert widths == sorted(widths, reverse=True)


def test_a_pilot_predicts_the_average_width_of_reruns_within_a_quarter() -> None:
    rng = np.random.default_rng(11)
    questions, trials = 200, 1000
    strong = rng.beta(4, 3, questions)
    cheap = np.clip(strong + 0.15 + rng.normal(0, 0.12, questions), 0, 1)  # lenient, noisy
    pilot = rng.choice(questions, 15, replace=False)
    (planned,) = plan_widths(questions, [0.25], pilot=(strong[pilot], cheap[pilot]))
    order = np.argsort(rng.random((trials, questions)), axis=1)
    sampled, rest = order[:, :50], order[:, 50:]
    reruns = ppi_mean(strong[sampled], cheap[sampled], cheap[rest])
    average = float(np.mean(reruns.ci_high - reruns.ci_low))
    assert planned.width == pytest.approx(average, rel=0.25)


def test_the_recommended_fraction_is_the_smallest_narrow_enough() -> None:
    # sd 0.3, correlation 0.7: residual variance 0.09 * 0.51 = 0.0459; 400 questions.
    # A fifth: n = 80, width 2 t(79) sqrt(0.8 / 80 * 0.0459) = 0.0853 > 0.08;
    # a quarter: n = 100, width 2 t(99) sqrt(0.75 / 100 * 0.0459) = 0.0736 <= 0.08.
    planned = plan_widths(400, sd=0.3, correlation=0.7)
    best = recommend_fraction(planned, 0.08)
    assert (best.fraction, best.n_calibration) == (0.25, 100)
    assert best.width == pytest.approx(2 * float(t_value(0.95, 99)) * math.sqrt(0.0075 * 0.0459))
    # Nothing narrow enough but every question: the whole sample (no width left).
    assert recommend_fraction(planned, 1e-6).fraction == 1.0


def test_the_prior_predicts_reruns_at_the_recommended_fraction_within_a_quarter() -> None:
    # Judges as the prior states them: the strong judge's per-answer score has sd 0.3, the
    # cheap one's the same sd, correlation 0.7, and a bias of +0.1 the estimator removes.
    rng = np.random.default_rng(3)
    questions, trials, sd, correlation = 400, 1000, 0.3, 0.7
    z = rng.standard_normal((2, questions))
    strong = 0.5 + sd * z[0]
    cheap = 0.6 + sd * (correlation * z[0] + math.sqrt(1 - correlation**2) * z[1])
    best = recommend_fraction(plan_widths(questions, sd=sd, correlation=correlation), 0.08)
    n = best.n_calibration
    order = np.argsort(rng.random((trials, questions)), axis=1)
    sampled, rest = order[:, :n], order[:, n:]
    reruns = ppi_mean(strong[sampled], cheap[sampled], cheap[rest])
    average = float(np.mean(reruns.ci_high - reruns.ci_low))
    assert best.width == pytest.approx(average, rel=0.25)


def test_the_planner_needs_a_pilot_or_a_prior() -> None:
    with pytest.raises(InputError, match="give a pilot, or a prior"):
        plan_widths(100, sd=0.3)
    with pytest.raises(InputError, match="at least 3 answers"):
        plan_widths(100, pilot=([0.1, 0.2], [0.3, 0.4]))
    with pytest.raises(InputError, match="calibration fraction"):
        plan_widths(100, [0.0], sd=0.3, correlation=0.5)
