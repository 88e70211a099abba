"""Simulation: the calibrated intervals cover the strong judge's full-run score at their
stated rate, for models and for paired differences, however the cheap judge is biased,
and they narrow as the cheap judge improves.

Each trial is a run of 200 questions and three models, eight checks an answer; the strong
judge's verdicts are the truth, a quarter of the questions is sampled, and a cheap judge
corrupts verdicts: lenient (missing read as meets), strict (meets read as missing) or blind
to contradictions (contradicts read as meets). Questions differ in difficulty, so the
models' answers to one question are correlated, as in a real run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from gamut_eval.calibration import MeanEstimate, ppi_mean
from gamut_eval.scoring import ScoringParams

TRIALS, QUESTIONS, SAMPLED, CHECKS = 1000, 200, 50, 20
MEETS, PARTIAL, MISSING, CONTRADICTS = range(4)
MODELS = np.array(
    [[0.55, 0.15, 0.20, 0.10], [0.45, 0.20, 0.27, 0.08], [0.60, 0.10, 0.25, 0.05]]
)  # verdict probabilities per model


def _scores(verdicts: npt.NDArray[np.int8]) -> npt.NDArray[np.float64]:
    """The tier score of each answer (one tier), as ``tier_score`` computes it."""
    params = ScoringParams()
    m, p, s, c = ((verdicts == k).sum(axis=-1).astype(np.float64) for k in range(4))
    return (m + params.lam * p + params.mu * c) / (m + p + s + abs(params.mu) * c)


def _run(seed: int) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]]:
    """Strong verdicts (trials, questions, models, checks) and a uniform draw per check."""
    rng = np.random.default_rng(seed)
    hard = rng.random((TRIALS, QUESTIONS, 1, 1)) < rng.beta(2, 5, (TRIALS, QUESTIONS, 1, 1))
    cumulative = MODELS.cumsum(axis=1)[None, None, :, None, :]
    draw = rng.random((TRIALS, QUESTIONS, len(MODELS), CHECKS))[..., None]
    verdicts = (draw > cumulative).sum(axis=-1).astype(np.int8)
    verdicts = np.where(hard & (rng.random(verdicts.shape) < 0.5), MISSING, verdicts)
    return verdicts.astype(np.int8), rng.random(verdicts.shape)


def _cheap(
    strong: npt.NDArray[np.int8], noise: npt.NDArray[np.float64], bias: str, rate: float
) -> npt.NDArray[np.int8]:
    source, target = {
        "lenient": (MISSING, MEETS),
        "strict": (MEETS, MISSING),
        "blind": (CONTRADICTS, MEETS),
    }[bias]
    return np.where((strong == source) & (noise < rate), target, strong).astype(np.int8)


def _calibrate(
    strong: npt.NDArray[np.float64], cheap: npt.NDArray[np.float64], seed: int
) -> MeanEstimate:
    """Per trial: sample SAMPLED questions without replacement and estimate the mean."""
    order = np.argsort(np.random.default_rng(seed).random((TRIALS, QUESTIONS)), axis=1)
    sampled, rest = order[:, :SAMPLED], order[:, SAMPLED:]
    pick = np.take_along_axis
    return ppi_mean(pick(strong, sampled, 1), pick(cheap, sampled, 1), pick(cheap, rest, 1))


def _coverage(estimate: MeanEstimate, truth: npt.NDArray[np.float64]) -> float:
    return float(((estimate.ci_low <= truth) & (truth <= estimate.ci_high)).mean())


@pytest.fixture(scope="module")
def run() -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]]:
    return _run(2024)


@pytest.mark.parametrize(("bias", "rate"), [("lenient", 0.4), ("strict", 0.3), ("blind", 1.0)])
def test_coverage_holds_for_models_and_paired_differences(
    run: tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]], bias: str, rate: float
) -> None:
    strong_verdicts, noise = run
    strong = _scores(strong_verdicts)  # (trials, questions, models)
    cheap = _scores(_cheap(strong_verdicts, noise, bias, rate))
    naive_bias = np.abs(cheap.mean(axis=1) - strong.mean(axis=1)).mean()
    assert naive_bias > 0.03  # the cheap judge is wrong enough to matter
    for model in range(len(MODELS)):
        estimate = _calibrate(strong[:, :, model], cheap[:, :, model], seed=model)
        coverage = _coverage(estimate, strong[:, :, model].mean(axis=1))
        assert 0.93 <= coverage <= 0.97, (bias, model, coverage)
        assert np.all(estimate.n_calibration == SAMPLED)
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        difference = strong[:, :, a] - strong[:, :, b]
        estimate = _calibrate(difference, cheap[:, :, a] - cheap[:, :, b], seed=10 + a + b)
        coverage = _coverage(estimate, difference.mean(axis=1))
        assert 0.93 <= coverage <= 0.97, (bias, a, b, coverage)


def test_intervals_narrow_as_the_cheap_judge_improves(
    run: tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]],
) -> None:
    strong_verdicts, noise = run
    strong = _scores(strong_verdicts)[:, :, 0]
    widths, ratios = [], []
    for rate in (0.8, 0.4, 0.2, 0.05):
        cheap = _scores(_cheap(strong_verdicts, noise, "lenient", rate))[:, :, 0]
        estimate = _calibrate(strong, cheap, seed=7)
        widths.append(float(np.mean(estimate.ci_high - estimate.ci_low)))
        ratios.append(float(np.mean(estimate.width_ratio)))
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] < 0.5 * widths[0]
    assert ratios[-1] < 0.5  # a good cheap judge: under half the strong sample's width
    assert all(r < 1.0 for r in ratios)
