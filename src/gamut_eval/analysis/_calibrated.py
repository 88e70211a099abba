"""Calibrated scores in the report: ``RUN_DIR/calibrated.json`` (written by ``gamut
calibrate`` and ``gamut demo``) read back, checked, and turned into report rows.
The estimate itself is ``gamut_eval.calibration``'s; the report shows what it wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from gamut_eval._files import read_mapping
from gamut_eval.analysis._tables import Count, Row, Score, Stat
from gamut_eval.calibration import CALIBRATED_FILE
from gamut_eval.errors import InputError, ValidationError

_READ = ConfigDict(extra="ignore", frozen=True)
"""calibrated.json holds more than the report shows (tier scores, differences)."""


class _FileRow(BaseModel):
    model_config = _READ

    model: str
    setting: str
    judge: str
    calibrated_with: str
    gamut: float | None
    ci_low: float | None
    ci_high: float | None
    naive_judge: float | None
    naive_calibrated_with: float | None
    n_answers: Annotated[int, Field(ge=0)]
    n_calibration: Annotated[int, Field(ge=0)]
    width_ratio: float | None = None


class _File(BaseModel):
    model_config = _READ

    judge: str
    calibrated_with: str
    confidence: Annotated[float, Field(gt=0, lt=1)]
    population: Literal["finite", "infinite"] = "finite"
    n_questions: Annotated[int, Field(ge=0)]
    sample: list[str]
    notes: list[str] = []
    rows: list[_FileRow]


class CalibratedRow(Row):
    """One model and setting: the cheap judge's score corrected by the strong judge's on a
    random sample of questions (``gamut calibrate``; docs/method.md, calibrated scores)."""

    setting: str
    """``multimodal`` or ``text_only``."""
    model: str
    """The answering model."""
    gamut: Score
    """The calibrated Gamut score (power-tuned prediction-powered mean over questions)."""
    gamut_low: Score
    """Low end of its interval: Student's t at ``confidence``, not a bootstrap interval."""
    gamut_high: Score
    """High end of its interval."""
    naive_judge: Score
    """The cheap judge's score of every answer, uncorrected."""
    naive_calibrated_with: Score
    """The strong judge's score of the sampled answers alone."""
    n_answers: Count
    """Answers the cheap judge scored."""
    n_calibration: Count
    """Answers in the calibration sample (one per sampled question)."""
    width_ratio: Stat
    """The interval's width over that of the strong judge's sample alone (under 1: the
    cheap judge narrowed it)."""
    judge: str
    """The cheap judge."""
    calibrated_with: str
    """The strong judge, or the verdict file of people's labels."""
    confidence: float
    """Coverage of the interval."""
    population: str
    """``finite``: the target is the strong judge's score on the run's questions;
    ``infinite``: on the larger pool they were drawn from."""
    n_questions: Count
    """Questions in the run."""
    sample_questions: Count
    """Questions in the calibration sample."""


def calibrated_rows(
    run_dir: Path | None, models: list[str], settings: list[str], notes: list[str]
) -> list[CalibratedRow]:
    """Rows of ``RUN_DIR/calibrated.json`` when present, for the run's ``models`` and
    ``settings``; a note says why when it cannot be read or does not match the run."""
    if run_dir is None or not (run_dir / CALIBRATED_FILE).is_file():
        return []
    path = run_dir / CALIBRATED_FILE
    left_out = f"{path} left out: "
    try:
        data = _File.model_validate(
            read_mapping(path, "calibrated-object", "calibrated.json holds one JSON object")
        )
    except pydantic.ValidationError as exc:
        from gamut_eval.rubric import pydantic_details

        problems = ValidationError([d.in_file(path) for d in pydantic_details(exc)])
        why = f"it is not calibrated scores as gamut calibrate writes them ({problems})"
        notes.append(left_out + why)
        return []
    except InputError as exc:
        notes.append(left_out + str(exc))
        return []
    foreign = sorted({f"{r.model} ({r.setting})" for r in data.rows
                      if r.model not in models or r.setting not in settings})  # fmt: skip
    if foreign:
        notes.append(
            left_out + f"its models are not this run's ({', '.join(foreign[:3])}); "
            "run gamut calibrate again"
        )
        return []
    notes += [f"calibrated scores: {note}" for note in data.notes]
    return [
        CalibratedRow(
            setting=r.setting,
            model=r.model,
            gamut=r.gamut,
            gamut_low=r.ci_low,
            gamut_high=r.ci_high,
            naive_judge=r.naive_judge,
            naive_calibrated_with=r.naive_calibrated_with,
            n_answers=r.n_answers,
            n_calibration=r.n_calibration,
            width_ratio=r.width_ratio,
            judge=r.judge,
            calibrated_with=r.calibrated_with,
            confidence=data.confidence,
            population=data.population,
            n_questions=data.n_questions,
            sample_questions=len(data.sample),
        )
        for r in sorted(data.rows, key=lambda r: (r.setting, -(r.gamut or 0.0), r.model))
    ]
