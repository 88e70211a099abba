"""Per-response scores as dense arrays indexed by setting, judge, model and question.

A paper-scale run has 2 x 3 x 14 x 1,813 = 152,292 judged responses: small enough to hold
densely, and dense arrays make every analysis a reduction over an axis (a model's mean is
a mean over the question axis; a judge gap is a difference along the judge axis) instead
of a join of tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import TIERS
from gamut_eval.scoring import Verdict

__all__ = [
    "SETTING_ORDER",
    "VERDICT_COLUMNS",
    "ScoreCube",
    "category_codes",
    "cube_from_scores",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

VERDICT_COLUMNS: tuple[str, ...] = (*(verdict.value for verdict in Verdict), "unscored")
"""The last axis of ``ScoreCube.counts``."""
SETTING_ORDER: tuple[str, ...] = ("multimodal", "text_only")
"""Settings listed first, in this order; any others follow alphabetically."""


@dataclass(frozen=True)
class ScoreCube:
    """Scores of every judged response of a run; NaN (or 0 counts) where there is none."""

    settings: tuple[str, ...]
    judges: tuple[str, ...]
    models: tuple[str, ...]
    questions: tuple[str, ...]
    gamut: FloatArray
    """``(S, J, M, Q)``: the Gamut score; NaN without a response or without a scored check."""
    tiers: FloatArray
    """``(S, J, M, Q, 3)``: tier scores in ``TIERS`` order; NaN where a tier has none."""
    counts: IntArray
    """``(S, J, M, Q, 5)``: checks per verdict (``VERDICT_COLUMNS``), summed over tiers."""
    present: BoolArray
    """``(S, J, M, Q)``: whether the run has this response."""

    def setting_index(self, name: str) -> int | None:
        return self.settings.index(name) if name in self.settings else None


def _ordered_settings(values: Sequence[str]) -> tuple[str, ...]:
    known = [s for s in SETTING_ORDER if s in values]
    return (*known, *sorted(set(values) - set(known)))


def _ordered_judges(values: Sequence[str], preferred: Sequence[str]) -> tuple[str, ...]:
    """The run's judge order (the first is the primary judge), then any others sorted."""
    first = [j for j in dict.fromkeys(preferred) if j in values]
    return (*first, *sorted(set(values) - set(first)))


def _key_column(scores: pd.DataFrame, name: str, default: str) -> pd.Series:
    if name not in scores.columns:
        return pd.Series(default, index=scores.index)
    column = scores[name]
    if column.isna().any():
        raise ValidationError(
            [ErrorDetail(name, "required", "a score row has no value here", None)]
        )
    return column.astype(str)


def category_codes(column: pd.Series, categories: Sequence[str]) -> IntArray:
    """Each value's index in ``categories``; -1 for null or a value not among them."""
    return np.asarray(pd.Categorical(column, categories=list(categories)).codes, dtype=np.int64)


def _verdict_counts(scores: pd.DataFrame) -> IntArray:
    """``(rows, 5)`` verdict counts summed over tiers; absent count columns count 0."""
    out = np.zeros((len(scores), len(VERDICT_COLUMNS)), dtype=np.int64)
    for k, verdict in enumerate(VERDICT_COLUMNS):
        for tier in TIERS:
            column = f"{tier.value}.{verdict}"
            if column in scores.columns:
                out[:, k] += scores[column].fillna(0).to_numpy(dtype=np.int64)
    return out


def _float_column(scores: pd.DataFrame, name: str) -> FloatArray:
    if name not in scores.columns:
        return np.full(len(scores), np.nan)
    return np.asarray(pd.to_numeric(scores[name], errors="coerce"), dtype=np.float64)


def cube_from_scores(scores: pd.DataFrame, judge_order: Sequence[str] = ()) -> ScoreCube:
    """A ``ScoreCube`` from a score table (``score_table``'s columns, or scores.jsonl
    flattened): ``question_id``, ``model``, ``setting``, ``judge``, ``gamut``, the tier
    columns and the ``<tier>.<verdict>`` counts. A missing ``setting`` or ``judge`` column
    means a single one. Two rows for one response are an error.
    """
    keys = {
        "setting": _key_column(scores, "setting", "multimodal"),
        "judge": _key_column(scores, "judge", "judge"),
        "model": _key_column(scores, "model", "model"),
        "question_id": _key_column(scores, "question_id", "question"),
    }
    axes = (
        _ordered_settings(keys["setting"].unique().tolist()),
        _ordered_judges(keys["judge"].unique().tolist(), judge_order),
        tuple(sorted(keys["model"].unique().tolist())),
        tuple(sorted(keys["question_id"].unique().tolist())),
    )
    shape = tuple(len(axis) for axis in axes)
    flat = np.zeros(len(scores), dtype=np.int64)
    for column, axis in zip(keys.values(), axes, strict=True):
        flat = flat * len(axis) + category_codes(column, axis)
    _refuse_duplicates(scores, flat)
    size = int(np.prod(shape))
    gamut = np.full(size, np.nan)
    gamut[flat] = _float_column(scores, "gamut")
    tiers = np.full((size, len(TIERS)), np.nan)
    for i, tier in enumerate(TIERS):
        tiers[flat, i] = _float_column(scores, tier.value)
    counts = np.zeros((size, len(VERDICT_COLUMNS)), dtype=np.int64)
    counts[flat] = _verdict_counts(scores)
    present = np.zeros(size, dtype=bool)
    present[flat] = True
    return ScoreCube(
        *axes,
        gamut=gamut.reshape(shape),
        tiers=tiers.reshape(*shape, len(TIERS)),
        counts=counts.reshape(*shape, len(VERDICT_COLUMNS)),
        present=present.reshape(shape),
    )


def _refuse_duplicates(scores: pd.DataFrame, flat: IntArray) -> None:
    """Two score rows for one response would silently overwrite each other."""
    _, first, counts = np.unique(flat, return_index=True, return_counts=True)
    if len(counts) and counts.max() > 1:
        row = int(first[np.argmax(counts > 1)])
        example = {k: scores.iloc[row].get(k) for k in ("question_id", "model", "setting", "judge")}
        raise ValidationError(
            [ErrorDetail("$", "unique-score", "two score rows for one response", example)]
        )
