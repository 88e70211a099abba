"""Self-preference: does a judge favour answers of its own model family?

For a judge of family f, each model's offset is the judge's score minus the mean score
the judges of *other* families give it (a judge of the same family could share the bias).
Averaged over family-f models that is ``own_offset``; over the other models,
``other_offset``, which is the judge's general leniency. Their difference is what it gives
its own family beyond that. The reference judges' scores include any bias they have for
their own families, so with three judges one judge's inflation d moves the others' values
by a fraction of d: read the rows together (docs/report.md works an example).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from gamut_eval.analysis._bootstrap import Bootstrap, nanmean
from gamut_eval.analysis._cube import ScoreCube
from gamut_eval.analysis._tables import Count, Row, Score, number

__all__ = ["SelfPreferenceRow", "reference_mean", "self_preference", "self_preference_row"]

FloatArray = npt.NDArray[np.float64]


class SelfPreferenceRow(Row):
    """Does a judge favour its own family's answers more than the other judges do?"""

    setting: str
    """Setting."""
    judge: str
    """Judge model id."""
    family: str
    """The judge's family."""
    own_models: Count
    """Models of that family."""
    other_models: Count
    """Models of other families."""
    reference_judges: str
    """The judges of other families compared against, ``; ``-separated."""
    own_offset: Score
    """Mean over own-family models of (this judge's score - the reference judges' mean)."""
    other_offset: Score
    """The same mean over the other families' models (the judge's general leniency)."""
    self_preference: Score
    """``own_offset - other_offset``: how much more it favours its own family."""
    self_preference_low: Score
    """Lower end of the bootstrap interval of ``self_preference``."""
    self_preference_high: Score
    """Upper end of that interval."""
    note: str | None
    """Why the numbers are missing, when they are."""


def reference_mean(scores: FloatArray, reference: Sequence[int]) -> FloatArray:
    """``(..., M)``: the mean score of each model over the ``reference`` judges."""
    return nanmean(np.moveaxis(scores[..., list(reference), :], -2, -1))


def self_preference(
    scores: FloatArray, judge: int, reference: Sequence[int], own: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """``(own_offset, other_offset)`` over leading axes; ``scores`` is ``(..., J, M)``.

    The offset of a model is the judge's score minus the mean of the ``reference`` judges'
    scores; ``own`` marks the models of the judge's family. Their difference removes the
    judge's uniform leniency, leaving the extra it grants its own family.
    """
    offsets = scores[..., judge, :] - reference_mean(scores, reference)
    return nanmean(offsets[..., own]), nanmean(offsets[..., ~own])


def self_preference_row(
    cube: ScoreCube,
    setting: str,
    j: int,
    point: FloatArray,
    resampled: FloatArray,
    boot: Bootstrap,
    families: Mapping[str, str],
) -> SelfPreferenceRow:
    judge = cube.judges[j]
    family = families[judge]
    reference = [k for k, other in enumerate(cube.judges) if families[other] != family]
    scored = ~np.isnan(point[j])
    own = np.array([families[m] == family for m in cube.models]) & scored
    other = ~own & scored
    row = {
        "setting": setting,
        "judge": judge,
        "family": family,
        "own_models": int(own.sum()),
        "other_models": int(other.sum()),
        "reference_judges": "; ".join(cube.judges[k] for k in reference),
    }
    note = _self_preference_gap(family, reference, own, other)
    if note:
        return SelfPreferenceRow(
            **row,
            own_offset=None,
            other_offset=None,
            self_preference=None,
            self_preference_low=None,
            self_preference_high=None,
            note=note,
        )
    own_point, other_point = self_preference(point, j, reference, own)
    own_boot, other_boot = self_preference(resampled, j, reference, own)
    low, high = boot.interval(own_boot - other_boot)
    return SelfPreferenceRow(
        **row,
        own_offset=number(own_point),
        other_offset=number(other_point),
        self_preference=number(own_point - other_point),
        self_preference_low=number(low),
        self_preference_high=number(high),
        note=None,
    )


def _self_preference_gap(
    family: str,
    reference: Sequence[int],
    own: npt.NDArray[np.bool_],
    other: npt.NDArray[np.bool_],
) -> str | None:
    """Why self-preference cannot be measured for this judge, or None when it can."""
    if not reference:
        return f"no judge of another family than {family!r} to compare with"
    if not own.any():
        return f"no model of the judge's family {family!r} was scored"
    if not other.any():
        return "no model of another family was scored"
    return None
