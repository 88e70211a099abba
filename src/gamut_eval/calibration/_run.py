"""Calibrated scores as part of a run (``gamut run --calibrate-with``), and its planner.

The cheap judge grades every answer; the strong judge grades only the answers to the
sampled questions (every model and setting of each), drawn from the seed before anything
is judged and recorded in run.json; then ``calibrate_run`` corrects the cheap judge's
scores and ``write_calibration`` writes RUN_DIR/calibrated.json. A verdict file (people's
labels, reference labels) can stand in for the strong judge: nothing is sent for it.

The planner gives the interval width to expect at each calibration fraction, before
paying. From a small pilot (both judges' scores of a few answers) or a stated prior (the
spread of the strong judge's per-answer score and its correlation with the cheap judge's),
the expected width of a calibrated interval is the finite-population formula of
docs/method.md [P3] with the tuned weight: ``2 t sqrt((1 - n / N) s^2(y - lam f) / n)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from gamut_eval.calibration._calibrated import (
    RANDOM_NOTE,
    Calibration,
    calibrate_run,
    check_covered,
    sample_questions,
    write_calibration,
)
from gamut_eval.calibration._ppi import t_value
from gamut_eval.errors import InputError
from gamut_eval.judge import JudgeSettings

if TYPE_CHECKING:
    from gamut_eval.run import RunResult

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


def _pilot_variances(y: npt.ArrayLike, f: npt.ArrayLike) -> tuple[float, float]:
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
        residual, strong = _pilot_variances(*pilot)
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


PILOT_MIN_ANSWERS = 10
"""Answers both judges scored that a run folder needs to serve as the planner's pilot."""


@dataclass(frozen=True)
class CalibrateWith:
    """Calibrated scores asked of a run: the strong judge (its settings) or a verdict file
    (people's labels, reference labels), the share of the questions to sample, the seed
    of the draw, and the confidence of the intervals (docs/method.md, calibrated scores)."""

    strong: JudgeSettings | Path
    fraction: float | None = None
    """Share of the questions in the sample; required with a judge. Without it, a verdict
    file that covers only some questions is the sample."""
    seed: int = 0
    confidence: float = 0.95

    @property
    def name(self) -> str:
        """The strong judge's name, or the verdict file's path."""
        return self.strong.judge if isinstance(self.strong, JudgeSettings) else str(self.strong)

    @property
    def judge(self) -> JudgeSettings | None:
        """The strong judge's settings; ``None`` for a verdict file."""
        return self.strong if isinstance(self.strong, JudgeSettings) else None

    @property
    def drawn(self) -> bool:
        """Whether the sample is drawn by the seed (not the questions a file covers)."""
        return self.judge is not None or self.fraction is not None


@dataclass(frozen=True)
class CalibratedRun:
    """A run with calibrated scores."""

    run: RunResult
    calibration: Calibration
    """Also in RUN_DIR/calibrated.json."""
    notes: list[str] = field(default_factory=list)
    """What the guarantee needs that the run cannot ensure (a sample it did not draw)."""


def calibration_sample(
    calibrate: CalibrateWith, question_ids: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The calibration sample of a run's questions, drawn from the seed before any verdict
    is seen (``sample_questions``), or, for a verdict file that covers only some questions
    and no fraction, those questions; and the notes to show (what the guarantee then
    needs). Refuses (``InputError``) a sample the strong side cannot cover."""
    from gamut_eval._verdict_table import read_verdict_table

    if calibrate.judge is not None:
        if calibrate.fraction is None:
            raise InputError(
                f"calibrating with the judge {calibrate.name} needs the fraction of questions "
                "it grades",
                setting="calibrate_fraction",
            )
        return sample_questions(question_ids, calibrate.fraction, calibrate.seed), []
    path = Path(calibrate.name)
    frame = read_verdict_table(path).frame
    if "question_id" not in frame.columns:
        raise InputError(f"{path}: the verdict rows have no `question_id` field")
    covered = set(frame["question_id"].astype(str)) & set(question_ids)
    if not covered:
        raise InputError(f"{path}: has no verdicts for any question of the dataset")
    if calibrate.fraction is not None:
        drawn = sample_questions(question_ids, calibrate.fraction, calibrate.seed)
        check_covered(path, drawn, covered, "calibrate_fraction")
        return drawn, []
    if len(covered) == len(set(question_ids)):
        raise InputError(
            f"{path}: covers every question; give the fraction of them to sample",
            setting="calibrate_fraction",
        )
    return sorted(covered), [RANDOM_NOTE]


def _check(calibrate: CalibrateWith, judges: Sequence[JudgeSettings]) -> None:
    """One judge to calibrate, a strong judge that is not it, a confidence in (0, 1)."""
    if len(judges) != 1:
        raise InputError(
            f"calibrated scores correct one judge; {len(judges)} were given "
            f"({', '.join(j.judge for j in judges)})",
            setting="judges",
        )
    if calibrate.name == judges[0].judge:
        raise InputError(
            f"{calibrate.name}: the judge to calibrate cannot calibrate itself",
            setting="calibrate_with",
        )
    if not 0.0 < calibrate.confidence < 1.0:
        raise InputError(
            f"the confidence must be between 0 and 1, got {calibrate.confidence!r}",
            setting="confidence",
        )


def run_calibrated(
    dataset_path: Path,
    out_dir: Path,
    judges: Sequence[JudgeSettings],
    calibrate: CalibrateWith,
    **options: Any,
) -> CalibratedRun:
    """``run_benchmark`` with calibrated scores of its one judge: the sample is drawn (or
    read from the verdict file) before anything is judged and recorded in run.json (its
    strong judge and seed are part of the run's identity: another is refused in the same
    folder unless ``overwrite``; a larger fraction continues the run and judges only the
    new questions); the strong judge grades only the sample's answers; calibrated.json is
    written. ``options``: ``run_benchmark``'s."""
    from gamut_eval.dataset import load_dataset
    from gamut_eval.run import run_benchmark

    _check(calibrate, judges)
    dataset = load_dataset(dataset_path, image_root=options.get("image_root"))
    sample, notes = calibration_sample(calibrate, [record.id for record in dataset])
    record = {
        "judge": judges[0].judge,
        "calibrated_with": calibrate.name,
        "seed": calibrate.seed if calibrate.drawn else None,
        "fraction": calibrate.fraction,
        "confidence": calibrate.confidence,
        "questions": sample,
    }
    strong = calibrate.judge
    result = run_benchmark(
        dataset_path,
        out_dir,
        [*judges, strong] if strong is not None else judges,
        sampled={strong.judge: sample} if strong is not None else None,
        calibration=record,
        **options,
    )
    calibration = calibrate_run(
        out_dir,
        calibrate.name,
        judge=judges[0].judge,
        fraction=calibrate.fraction,
        seed=calibrate.seed,
        confidence=calibrate.confidence,
        dataset=dataset_path,
    )
    write_calibration(calibration, out_dir)
    return CalibratedRun(result, calibration, notes)


@dataclass(frozen=True)
class CalibrationPlan:
    """What each calibration fraction would give and take (``gamut run --dry-run`` with
    ``--calibrate-with``): the expected interval width of a model's calibrated score, and
    the share of the checks the strong judge would grade."""

    rows: list[PlannedWidth]
    shares: list[float]
    """Per row, the share of all (answer, check) pairs in the sample's questions."""
    recommended: PlannedWidth
    """The smallest fraction whose expected width is at most ``target``."""
    target: float
    source: str
    """Where the spread and agreement came from: a pilot in the run folder, or the prior."""


def plan_calibration(
    dataset_path: Path,
    out_dir: Path,
    judge: str,
    responses: Path,
    calibrate: CalibrateWith,
    *,
    setting: str = "both",
    prior: tuple[float, float] = (0.3, 0.7),
    target: float = TARGET_WIDTH,
    fractions: Sequence[float] = FRACTIONS,
) -> CalibrationPlan:
    """The planner: for each fraction, the expected interval width of a model's calibrated
    score (``plan_widths``), the share of the checks the strong judge grades, and the
    fraction to recommend (``recommend_fraction``). The judges' spread and agreement come
    from a pilot when ``out_dir`` holds both judges' scores of at least
    ``PILOT_MIN_ANSWERS`` answers (an earlier calibrated run), else from ``prior``: the
    standard deviation of the strong judge's per-answer score and its correlation with the
    cheap judge's. ``responses`` is read as it is (``gamut run --dry-run`` checks it)."""
    from gamut_eval.dataset import load_dataset
    from gamut_eval.responses import iter_responses

    dataset = load_dataset(dataset_path)
    checklists = dataset.checklists()
    settings = ("multimodal", "text_only") if setting == "both" else (setting,)
    weight: dict[str, int] = {}
    for _, row in iter_responses(responses):
        if row.setting in settings and row.question_id in checklists:
            checks = len(checklists[row.question_id].checks)
            weight[row.question_id] = weight.get(row.question_id, 0) + checks
    total = sum(weight.values()) or 1
    questions = [record.id for record in dataset]
    pilot = _pilot(out_dir, judge, calibrate.name)
    if pilot is not None:
        rows = plan_widths(len(questions), fractions, pilot=pilot, confidence=calibrate.confidence)
        source = f"a pilot: both judges' scores of {len(pilot[0])} answers in {out_dir}"
    else:
        sd, correlation = prior
        rows = plan_widths(
            len(questions), fractions, sd=sd, correlation=correlation,
            confidence=calibrate.confidence,
        )  # fmt: skip
        source = f"the prior: per-answer score sd {sd:g}, judges' correlation {correlation:g}"
    shares = []
    for planned in rows:
        drawn = sample_questions(questions, planned.fraction, calibrate.seed)
        shares.append(sum(weight.get(q, 0) for q in drawn) / total)
    return CalibrationPlan(rows, shares, recommend_fraction(rows, target), target, source)


def _pilot(out_dir: Path, judge: str, strong: str) -> tuple[list[float], list[float]] | None:
    """Both judges' scores of the same answers in ``out_dir``'s scores.jsonl, when it has
    enough of them."""
    from gamut_eval._tables import read_rows

    path = out_dir / "scores.jsonl"
    if not path.is_file():
        return None
    by_judge: dict[str, dict[tuple[str, str, str], float]] = {judge: {}, strong: {}}
    try:
        for _, row in read_rows(path, what="scores"):
            scores = by_judge.get(str(row.get("judge")))
            if scores is not None and isinstance(row.get("gamut"), int | float):
                key = (str(row["question_id"]), str(row["model"]), str(row["setting"]))
                scores[key] = float(row["gamut"])
    except (InputError, KeyError):
        return None
    both = sorted(set(by_judge[judge]) & set(by_judge[strong]))
    if len(both) < PILOT_MIN_ANSWERS:
        return None
    # Each model and setting is its own estimate: its spread is around its own mean, so
    # the pairs are centred per model and setting (the models' gaps are not spread).
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for key in both:
        groups.setdefault(key[1:], []).append((by_judge[strong][key], by_judge[judge][key]))
    ys: list[float] = []
    fs: list[float] = []
    for pairs in groups.values():
        mean_y = sum(y for y, _ in pairs) / len(pairs)
        mean_f = sum(f for _, f in pairs) / len(pairs)
        ys += [y - mean_y for y, _ in pairs]
        fs += [f - mean_f for _, f in pairs]
    return ys, fs
