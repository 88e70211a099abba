"""Calibrated scores: a cheap judge on every answer, corrected by a strong judge (or people)
on a random sample of questions, with intervals that stay valid however wrong the cheap
judge is (prediction-powered inference, power-tuned; docs/method.md, calibrated scores).
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.calibration._calibrated import (
        CALIBRATED_FILE as CALIBRATED_FILE,
        GIVEN_NOTE as GIVEN_NOTE,
        RANDOM_NOTE as RANDOM_NOTE,
        Calibration as Calibration,
        calibrate_run as calibrate_run,
        calibrate_scores as calibrate_scores,
        sample_questions as sample_questions,
        write_calibration as write_calibration,
        write_sample as write_sample,
    )
    from gamut_eval.calibration._ppi import (
        MeanEstimate as MeanEstimate,
        Population as Population,
        normal_cdf as normal_cdf,
        ppi_mean as ppi_mean,
        t_value as t_value,
        z_value as z_value,
    )
    from gamut_eval.calibration._run import (
        FRACTIONS as FRACTIONS,
        PILOT_MIN_ANSWERS as PILOT_MIN_ANSWERS,
        TARGET_WIDTH as TARGET_WIDTH,
        CalibratedRun as CalibratedRun,
        CalibrateWith as CalibrateWith,
        CalibrationPlan as CalibrationPlan,
        PlannedWidth as PlannedWidth,
        calibration_sample as calibration_sample,
        plan_calibration as plan_calibration,
        plan_widths as plan_widths,
        recommend_fraction as recommend_fraction,
        run_calibrated as run_calibrated,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
