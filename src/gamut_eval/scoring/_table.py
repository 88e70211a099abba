"""Scoring many responses at once: a table of verdict rows in, a table of scores out.

Gives exactly the numbers ``score_response`` gives (the same float operations in the same
order), but counts verdicts with one ``bincount`` over integer codes instead of Python
loops, so a paper-scale pass (millions of verdict rows) scores in about a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric._checklist import Checklist
from gamut_eval.rubric._model import TIERS
from gamut_eval.scoring._params import ScoringParams
from gamut_eval.scoring._verdict import Verdict

__all__ = ["COUNT_COLUMNS", "RESPONSE_KEYS", "score_table", "summarise_scores"]

IntArray = npt.NDArray[np.int64]

RESPONSE_KEYS: tuple[str, ...] = ("question_id", "model", "setting", "judge")
"""Columns that identify one judged response in a verdict table (those present are used)."""

_VERDICTS: tuple[str, ...] = (*(v.value for v in Verdict), "unscored")
_UNSCORED = len(Verdict)
COUNT_COLUMNS: tuple[str, ...] = tuple(f"{t.value}.{v}" for t in TIERS for v in _VERDICTS)
"""Count columns of a score table, ``<tier>.<verdict>``, ``unscored`` included."""


def _factorize(
    values: pd.Series | npt.NDArray[np.generic],
) -> tuple[IntArray, npt.NDArray[np.object_]]:
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), np.asarray(uniques, dtype=object)


def _row_error(column: str, rule: str, message: str, value: object) -> ValidationError:
    return ValidationError([ErrorDetail(column, rule, message, value)])


def _groups(frame: pd.DataFrame, keys: Sequence[str]) -> tuple[IntArray, pd.DataFrame]:
    """A group code per row (one per distinct key combination) and each group's key values."""
    combined = np.zeros(len(frame), dtype=np.int64)
    for key in keys:
        codes, uniques = _factorize(frame[key])
        if (codes < 0).any():
            raise _row_error(key, "required", "a verdict row has no value for this key", None)
        combined, _ = _factorize(combined * len(uniques) + codes)
    _, first = np.unique(combined, return_index=True)
    return combined, frame.iloc[first][list(keys)].reset_index(drop=True)


def _tier_codes(frame: pd.DataFrame, checklists: Mapping[str, Checklist] | None) -> IntArray:
    """Tier index (0 AC, 1 V, 2 C) per row, from a ``tier`` column or the checklists."""
    index = {tier.value: i for i, tier in enumerate(TIERS)}
    if "tier" in frame.columns:
        codes, uniques = _factorize(frame["tier"])
        for value in uniques:
            if value not in index:
                raise _row_error("tier", "allowed-value", "unknown tier", value)
        if (codes < 0).any():
            raise _row_error("tier", "required", "a verdict row has no tier", None)
        return np.array([index[v] for v in uniques], dtype=np.int64)[codes]
    if checklists is None:
        raise _row_error(
            "tier", "required", "give a `tier` column, or checklists to look tiers up", None
        )
    pair, _ = _groups(frame, ["question_id", "check_id"])
    _, first = np.unique(pair, return_index=True)
    questions = frame["question_id"].to_numpy()[first]
    checks = frame["check_id"].to_numpy()[first]
    lookup = {qid: {c.id: index[c.tier.value] for c in cl.checks} for qid, cl in checklists.items()}
    tiers = np.empty(len(first), dtype=np.int64)
    for i, (qid, check_id) in enumerate(zip(questions, checks, strict=True)):
        if qid not in lookup:
            raise _row_error("question_id", "known-question", "no checklist for this question", qid)
        if check_id not in lookup[qid]:
            raise _row_error(
                "check_id", "known-check", f"no such check in question {qid!r}", check_id
            )
        tiers[i] = lookup[qid][check_id]
    return tiers[pair]


def _verdict_codes(frame: pd.DataFrame) -> IntArray:
    codes, uniques = _factorize(frame["verdict"])
    lookup = {v.value: i for i, v in enumerate(Verdict)}
    mapped = []
    for value in uniques:
        key = value.value if isinstance(value, Verdict) else value
        if key not in lookup:
            allowed = ", ".join(lookup)
            raise _row_error(
                "verdict", "verdict-value", f"unknown verdict; expected {allowed} or null", value
            )
        mapped.append(lookup[key])
    table = np.array([*mapped, _UNSCORED], dtype=np.int64)
    return table[codes]  # code -1 (null) picks the last entry: unscored


def _check_duplicates(frame: pd.DataFrame, group: IntArray) -> None:
    codes, _ = _factorize(frame["check_id"])
    pair, uniques = _factorize(group * (int(codes.max()) + 1 if len(codes) else 1) + codes)
    if len(uniques) != len(frame):
        duplicated = frame.iloc[np.flatnonzero(np.bincount(pair)[pair] > 1)[:1]]
        raise _row_error(
            "check_id",
            "unique-verdict",
            "two verdict rows for one response and check",
            duplicated.iloc[0].to_dict(),
        )


def score_table(
    verdicts: pd.DataFrame,
    checklists: Mapping[str, Checklist] | None = None,
    params: ScoringParams | None = None,
    keys: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per-response scores from verdict rows.

    ``verdicts`` has the ``keys`` columns (default: those of ``RESPONSE_KEYS`` present),
    ``check_id``, ``verdict`` (a verdict string or null for unscored) and either ``tier`` or
    ``checklists`` (question id -> checklist) to look tiers up. Returns one row per response:
    the keys, ``gamut``, one column per tier (NaN where the tier has no scored check) and
    the ``COUNT_COLUMNS``. Numbers equal ``score_response``'s exactly.
    """
    params = params or ScoringParams()
    keys = list(keys) if keys is not None else [k for k in RESPONSE_KEYS if k in verdicts.columns]
    group, out = _groups(verdicts, keys)
    _check_duplicates(verdicts, group)
    cell = (group * len(TIERS) + _tier_codes(verdicts, checklists)) * len(_VERDICTS)
    counts = np.bincount(cell + _verdict_codes(verdicts), minlength=len(out) * len(COUNT_COLUMNS))
    counts = counts.reshape(len(out), len(TIERS), len(_VERDICTS))
    tier_scores = _tier_scores(counts, params)
    out["gamut"] = _gamut(tier_scores, params)
    for i, tier in enumerate(TIERS):
        out[tier.value] = tier_scores[:, i]
    flat = counts.reshape(len(out), -1)
    for j, name in enumerate(COUNT_COLUMNS):
        out[name] = flat[:, j]
    return out


def _tier_scores(counts: IntArray, params: ScoringParams) -> npt.NDArray[np.float64]:
    """T per response and tier, NaN where the tier has no scored check."""
    m, p, s, c = (counts[:, :, k].astype(np.float64) for k in range(4))
    # Same operations, same order, as ``tier_score`` so results are bit-identical.
    numerator = m + params.lam * p + params.mu * c
    denominator = m + p + s + abs(params.mu) * c
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def _gamut(tier_scores: npt.NDArray[np.float64], params: ScoringParams) -> npt.NDArray[np.float64]:
    numerator = np.zeros(len(tier_scores))
    total = np.zeros(len(tier_scores))
    for i, tier in enumerate(TIERS):
        present = ~np.isnan(tier_scores[:, i])
        weight = params.weights[tier]
        numerator = numerator + np.where(present, weight * np.nan_to_num(tier_scores[:, i]), 0.0)
        total = total + np.where(present, weight, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, numerator / total, np.nan)


def summarise_scores(scores: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-(model, setting, judge) means of a ``score_table`` result.

    ``gamut`` and tier columns are means over the responses that have a value (a response
    with no scored check counts in ``responses`` but not in the mean); ``unscored_rate`` is
    the share of all checks that the judge could not grade.
    """
    by = list(by) if by is not None else [k for k in RESPONSE_KEYS[1:] if k in scores.columns]
    unscored = [c for c in COUNT_COLUMNS if c.endswith(".unscored")]
    frame = scores.assign(
        _unscored=scores[unscored].sum(axis=1), _checks=scores[list(COUNT_COLUMNS)].sum(axis=1)
    )
    grouped = frame.groupby(by, sort=True, observed=True, dropna=False)
    out = grouped[["gamut", *(t.value for t in TIERS)]].mean()
    out.insert(0, "responses", grouped.size())
    out.insert(1, "scored", grouped["gamut"].count())
    totals = grouped[["_unscored", "_checks"]].sum()
    out["unscored_rate"] = totals["_unscored"] / totals["_checks"].where(totals["_checks"] > 0)
    return out.reset_index()
