"""Calibrated scores of a run: each model's Gamut score from a cheap judge on every answer,
corrected by a strong judge (or people's labels) on a random sample of questions.

The sampling unit is the question: every model and setting of a sampled question is in the
sample together, so each estimand (a model and setting's mean, or the paired difference of
two models) is a mean over questions of one number per question, and the estimator runs on
those per-question numbers (docs/method.md, calibrated scores).

The calibration sample (which questions the strong judge, or people, grades) is drawn from
a seed and the question ids alone, before any verdict is seen. Questions are ordered by a
keyed hash of (seed, question id) and the first ``ceil(fraction * n)`` are taken, so the
draw is nested: raising the fraction adds questions and keeps every one already drawn, and
adding questions to the benchmark never reorders the old ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from gamut_eval._files import atomic_writer, write_json
from gamut_eval._tables import json_records
from gamut_eval.calibration._ppi import MeanEstimate, Population, normal_cdf, ppi_mean
from gamut_eval.errors import InputError, ValidationError
from gamut_eval.rubric import TIERS

if TYPE_CHECKING:
    import pandas as pd

    from gamut_eval.scoring import ScoringParams

CALIBRATED_FILE = "calibrated.json"
"""What ``write_calibration`` names its file in a run folder."""

_KEYS = ("model", "setting")
_TIER_COLUMNS = tuple(t.value for t in TIERS)
RANDOM_NOTE = (
    "The verdict file covers only some questions, so they are the calibration sample: the "
    "intervals hold only if those questions were chosen at random (for example by "
    "write_sample) before any verdict was seen, and not used to build or tune the judge."
)
GIVEN_NOTE = (
    "The sample was given as a list of questions, not drawn by a seed: the intervals hold "
    "only if those questions were chosen at random before any verdict was seen, and not "
    "used to build or tune the judge."
)


def _key(seed: int, question_id: str) -> bytes:
    return hashlib.blake2b(
        question_id.encode("utf-8"), digest_size=16, key=str(seed).encode("ascii")
    ).digest()


def sample_questions(question_ids: Iterable[str], fraction: float, seed: int = 0) -> list[str]:
    """The first ``ceil(fraction * n)`` distinct questions in the seed's order.

    The list is in draw order: its first k entries are the sample of any smaller fraction
    that takes k questions.
    """
    if not 0.0 < fraction <= 1.0:
        raise InputError(f"the calibration fraction must be in (0, 1], got {fraction!r}")
    distinct = list(dict.fromkeys(question_ids))
    ordered = sorted(distinct, key=lambda q: (_key(seed, q), q))
    return ordered[: math.ceil(fraction * len(distinct) - 1e-9)]


def write_sample(
    path: str | Path, question_ids: Iterable[str], fraction: float, seed: int = 0
) -> list[str]:
    """Write the sample to ``path``, one question id a line in draw order, for people to
    label; returns it. The file is written whole or not at all."""
    drawn = sample_questions(question_ids, fraction, seed)
    try:
        with atomic_writer(path) as handle:
            handle.write("".join(f"{q}\n" for q in drawn))
    except OSError as exc:
        raise InputError(f"{path}: cannot write the sample: {exc.strerror}") from None
    return drawn


def check_covered(
    name: str | Path, drawn: Sequence[str], covered: set[str], setting: str | None = None
) -> None:
    """Refuse a drawn sample with questions the strong side ``name`` has no verdicts for."""
    absent = [q for q in drawn if q not in covered]
    if absent:
        raise InputError(
            f"{name}: has no verdicts for {len(absent)} of the {len(drawn)} sampled "
            f"questions (first: {', '.join(absent[:5])})",
            setting=setting,
        )


@dataclass(frozen=True)
class Calibration:
    """Calibrated scores: one row per model and setting, and their paired differences."""

    rows: pd.DataFrame
    """``model``, ``setting``, ``judge``, ``calibrated_with``, ``gamut``, ``ci_low``,
    ``ci_high``, ``standard_error``, ``n_answers``, ``n_calibration``, ``lam``,
    ``naive_judge`` (the cheap judge's plain mean), ``naive_calibrated_with`` (the strong
    judge's mean over the sample), ``width_ratio`` and, per tier, ``<tier>``,
    ``<tier>.ci_low``, ``<tier>.ci_high``, ``<tier>.n_calibration``."""
    differences: pd.DataFrame
    """Per setting and pair of models: ``model_a``, ``model_b``, ``difference`` (a minus
    b), its interval, ``standard_error``, ``p_sign_right``, ``n_answers``, ``n_calibration``."""
    judge: str
    calibrated_with: str
    confidence: float
    population: Population
    sample: list[str]
    """The calibration sample's questions, in draw order when drawn by a seed."""
    n_questions: int
    fraction: float | None = None
    seed: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The content of ``calibrated.json`` (NaN written as null)."""
        return {
            "judge": self.judge,
            "calibrated_with": self.calibrated_with,
            "confidence": self.confidence,
            "population": self.population,
            "fraction": self.fraction,
            "seed": self.seed,
            "n_questions": self.n_questions,
            "sample": self.sample,
            "notes": self.notes,
            "rows": json_records(self.rows),
            "differences": json_records(self.differences),
        }


def _matrix(
    scores: pd.DataFrame,
    column: str,
    rows: pd.MultiIndex,
    questions: pd.Index,
) -> npt.NDArray[np.float64]:
    """(model and setting) x question array of one score column; NaN where absent."""
    import pandas as pd

    out = np.full((len(rows), len(questions)), np.nan)
    if column not in scores.columns or scores.empty:
        return out
    r = rows.get_indexer(pd.MultiIndex.from_frame(scores[list(_KEYS)].astype(str)))
    q = questions.get_indexer(pd.Index(scores["question_id"].astype(str)))
    keep = (r >= 0) & (q >= 0)
    out[r[keep], q[keep]] = pd.to_numeric(scores[column], errors="coerce").to_numpy()[keep]
    return out


def _check_columns(scores: pd.DataFrame, what: str, *, unique: bool = True) -> None:
    """The columns needed and (``unique``) one score per question, model and setting."""
    missing = [c for c in ("question_id", *_KEYS, "gamut") if c not in scores.columns]
    if missing:
        raise InputError(f"{what}: the score table has no column {', '.join(missing)}")
    if not unique:
        return
    keys = ["question_id", *_KEYS]
    repeated = scores[keys].astype(str).duplicated()
    if repeated.any():
        first = scores.loc[repeated.to_numpy(), keys].astype(str).iloc[0].to_dict()
        raise InputError(f"{what}: two scores for one answer ({first})")


def calibrate_scores(
    cheap: pd.DataFrame,
    strong: pd.DataFrame,
    sample: Sequence[str],
    *,
    judge: str,
    calibrated_with: str,
    confidence: float = 0.95,
    population: Population = "finite",
) -> Calibration:
    """Calibrated scores from two per-answer score tables (as ``score_table`` gives).

    ``cheap``: the cheap judge's scores of every answer; ``strong``: the strong judge's
    (rows of questions outside ``sample`` are ignored). The population is the questions
    ``cheap`` has; a sampled answer the strong judge did not score counts as not sampled.
    """
    import pandas as pd

    _check_columns(cheap, judge)
    _check_columns(strong, calibrated_with)
    questions = pd.Index(sorted(cheap["question_id"].astype(str).unique()))
    keys = cheap[list(_KEYS)].astype(str).drop_duplicates().sort_values(list(_KEYS))
    rows = pd.MultiIndex.from_frame(keys)
    sampled = questions.isin([str(q) for q in sample])
    known = set(questions)

    def estimate(
        column: str,
    ) -> tuple[MeanEstimate, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        c = _matrix(cheap, column, rows, questions)
        s = _matrix(strong, column, rows, questions)
        result = ppi_mean(
            s[:, sampled],
            c[:, sampled],
            c[:, ~sampled],
            confidence=confidence,
            population=population,
        )
        return result, c, s

    gamut, cheap_gamut, strong_gamut = estimate("gamut")
    table = keys.reset_index(drop=True).assign(judge=judge, calibrated_with=calibrated_with)
    table["gamut"] = gamut.estimate
    table["ci_low"] = gamut.ci_low
    table["ci_high"] = gamut.ci_high
    table["standard_error"] = gamut.standard_error
    table["n_answers"] = gamut.n_answers
    table["n_calibration"] = gamut.n_calibration
    table["lam"] = gamut.lam
    table["naive_judge"] = gamut.cheap_mean
    table["naive_calibrated_with"] = gamut.strong_mean
    table["width_ratio"] = gamut.width_ratio
    for tier in _TIER_COLUMNS:
        result = estimate(tier)[0]
        table[tier] = result.estimate
        table[f"{tier}.ci_low"] = result.ci_low
        table[f"{tier}.ci_high"] = result.ci_high
        table[f"{tier}.n_calibration"] = result.n_calibration
    differences = _differences(keys, cheap_gamut, strong_gamut, sampled, confidence, population)
    return Calibration(
        rows=table,
        differences=differences,
        judge=judge,
        calibrated_with=calibrated_with,
        confidence=confidence,
        population=population,
        sample=[str(q) for q in sample if str(q) in known],
        n_questions=len(questions),
    )


def p_sign_right(
    estimate: npt.NDArray[np.float64], standard_error: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The normal approximation to the probability that each estimate's sign is right,
    Φ(|estimate| / standard error): 1 for a nonzero estimate with no spread at all (every
    sampled answer gave the same difference), undefined (NaN) for a zero one."""
    size = np.abs(np.asarray(estimate, dtype=np.float64))
    spread = np.asarray(standard_error, dtype=np.float64)
    z = np.divide(size, spread, out=np.where(size > 0, np.inf, np.nan), where=spread > 0)
    return normal_cdf(z)


def _differences(
    keys: pd.DataFrame,
    cheap: npt.NDArray[np.float64],
    strong: npt.NDArray[np.float64],
    sampled: npt.NDArray[np.bool_],
    confidence: float,
    population: Population,
) -> pd.DataFrame:
    """Every paired difference of two models within a setting, one estimator call."""
    import pandas as pd

    pairs: list[tuple[int, int]] = []
    positions = keys.reset_index(drop=True)
    for _, group in positions.groupby("setting", sort=True):
        index = list(group.index)
        pairs += [(a, b) for i, a in enumerate(index) for b in index[i + 1 :]]
    columns = [
        "setting", "model_a", "model_b", "difference", "ci_low", "ci_high",
        "standard_error", "p_sign_right", "n_answers", "n_calibration",
    ]  # fmt: skip
    if not pairs:
        return pd.DataFrame(columns=columns)
    a, b = (np.array(side) for side in zip(*pairs, strict=True))
    c, s = cheap[a] - cheap[b], strong[a] - strong[b]
    result = ppi_mean(
        s[:, sampled], c[:, sampled], c[:, ~sampled], confidence=confidence, population=population
    )
    return pd.DataFrame(
        {
            "setting": positions["setting"].to_numpy()[a],
            "model_a": positions["model"].to_numpy()[a],
            "model_b": positions["model"].to_numpy()[b],
            "difference": result.estimate,
            "ci_low": result.ci_low,
            "ci_high": result.ci_high,
            "standard_error": result.standard_error,
            "p_sign_right": p_sign_right(result.estimate, result.standard_error),
            "n_answers": result.n_answers,
            "n_calibration": result.n_calibration,
        },
        columns=columns,
    )


def _params(manifest: dict[str, Any]) -> ScoringParams:
    """The run's scoring parameters, from run.json (the defaults when it gives none)."""
    import pydantic

    from gamut_eval.rubric import pydantic_details
    from gamut_eval.scoring import ScoringParams

    identity = manifest.get("identity")
    raw = manifest.get("scoring") or (
        identity.get("scoring") if isinstance(identity, dict) else None
    )
    try:
        return ScoringParams.model_validate(raw) if raw else ScoringParams()
    except pydantic.ValidationError as exc:
        raise ValidationError([d.in_file("run.json") for d in pydantic_details(exc)]) from None


def _strong_from_file(
    path: Path, dataset: str | Path | None, params: ScoringParams
) -> pd.DataFrame:
    """Scores of a verdict file (people's labels, reference labels), checked and scored."""
    from gamut_eval._verdict_table import read_verdict_table
    from gamut_eval.dataset import load_dataset
    from gamut_eval.scoring import score_table

    if dataset is None:
        raise InputError(
            f"{path}: scoring a verdict file needs the run's dataset (its checklists give "
            "each check's tier); give the dataset"
        )
    frame = read_verdict_table(path).frame
    for column in ("model", "setting"):
        if column not in frame.columns:
            raise InputError(f"{path}: the verdict rows have no `{column}` field")
    if "judge" in frame.columns:
        judges = frame["judge"].dropna().astype(str).unique()
        if len(judges) > 1:
            raise InputError(
                f"{path}: the verdict rows come from {len(judges)} judges "
                f"({', '.join(sorted(judges)[:5])}); give a file of one"
            )
        frame = frame.drop(columns=["judge"])
    checklists = load_dataset(dataset).checklists()
    try:
        return score_table(frame, checklists, params, keys=["question_id", *_KEYS])
    except ValidationError as exc:
        raise ValidationError([d.in_file(path) for d in exc.details]) from None


def calibrate_run(
    run_dir: str | Path,
    calibrated_with: str | Path,
    *,
    judge: str | None = None,
    fraction: float | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    population: Population = "finite",
    dataset: str | Path | None = None,
    sample: Sequence[str] | None = None,
) -> Calibration:
    """Calibrated scores of a finished run folder.

    ``calibrated_with``: another judge of the run, or a verdict file (with ``dataset``, to
    score it). ``judge``: the cheap judge (needed when the run has more than one other).
    The sample is drawn from ``fraction`` and ``seed`` (``sample_questions``); a verdict
    file that covers only some questions is the sample itself when no fraction is given,
    and must cover every drawn question when one is. ``sample``: the calibration sample
    given as a list of questions instead (no fraction), each covered by ``calibrated_with``.
    """
    from gamut_eval.records import load_run

    if not 0.0 < confidence < 1.0:
        raise InputError(f"the confidence must be between 0 and 1, got {confidence!r}")
    tables = load_run(run_dir)
    # load_run's flattening can repeat a tier's name (an all-NaN column from the counts of
    # answers without that tier); the first is the tier score.
    scores = tables.scores.loc[:, ~tables.scores.columns.duplicated()]
    _check_columns(scores, str(tables.path / "scores.jsonl"), unique=False)
    judges = sorted(scores["judge"].astype(str).unique()) if "judge" in scores.columns else []
    name = str(calibrated_with)
    if name in judges:
        strong = scores[scores["judge"].astype(str) == name]
    elif Path(name).is_file():
        strong = _strong_from_file(Path(name), dataset, _params(tables.manifest))
    else:
        raise InputError(
            f"{name}: neither a judge of {tables.path} (judges: {', '.join(judges) or 'none'}) "
            "nor a verdict file"
        )
    others = [j for j in judges if j != name]
    if judge is None:
        if len(others) != 1:
            raise InputError(
                f"{tables.path}: the run has judges {', '.join(judges)}; "
                "choose the one to calibrate"
            )
        judge = others[0]
    elif judge not in others:
        raise InputError(
            f"{judge}: not a judge of {tables.path} to calibrate "
            f"(judges: {', '.join(others) or 'none'})"
        )
    cheap = scores[scores["judge"].astype(str) == judge]
    questions = sorted(cheap["question_id"].astype(str).unique())
    covered = set(strong["question_id"].astype(str)) & set(questions)
    notes: list[str] = []
    if sample is not None:
        if fraction is not None:
            raise InputError("give the calibration sample or the fraction to draw it, not both")
        sample = list(dict.fromkeys(str(q) for q in sample))
        known = set(questions)
        unknown = [q for q in sample if q not in known]
        absent = [q for q in sample if q not in covered]
        if not sample:
            raise InputError("the calibration sample is empty")
        if unknown:
            raise InputError(
                f"the calibration sample has {len(unknown)} question(s) the run does not "
                f"(first: {', '.join(unknown[:5])})"
            )
        if absent:
            raise InputError(
                f"the calibration sample has {len(absent)} question(s) {name} has no "
                f"verdicts for (first: {', '.join(absent[:5])})"
            )
        notes.append(GIVEN_NOTE)
    elif fraction is not None:
        sample = sample_questions(questions, fraction, seed)
        check_covered(name, sample, covered)
    elif len(covered) == len(questions):
        raise InputError(f"{name}: covers every question of the run; give the fraction to sample")
    else:
        if not covered:
            raise InputError(f"{name}: has no verdicts for any question of {tables.path}")
        sample = sorted(covered)
        notes.append(RANDOM_NOTE)
    result = calibrate_scores(
        cheap,
        strong,
        sample,
        judge=judge,
        calibrated_with=name,
        confidence=confidence,
        population=population,
    )
    return dataclasses.replace(
        result, fraction=fraction, seed=seed if fraction is not None else None, notes=notes
    )


def write_calibration(calibration: Calibration, path: str | Path) -> Path:
    """Write ``calibration`` as JSON to ``path`` (a run folder: its ``calibrated.json``),
    whole or not at all; returns the file written."""
    target = Path(path)
    if target.is_dir():
        target = target / CALIBRATED_FILE
    write_json(target, calibration.to_json())
    return target
