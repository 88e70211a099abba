"""Judges' verdicts compared check by check: with each other, and with reference labels.

**Between judges**: Cohen's kappa and ordinal Krippendorff's alpha. Two judges can rank
the models identically and still disagree on many single checks; the score hides that,
the verdicts do not. The unit is one check of one response, graded by every judge;
unscored verdicts are left out (a judge failure is not a verdict).

At paper scale this aligns about 4.6 million verdict rows, so nothing here loops over
rows: verdicts become small integer codes, each (response, check) a unit id, and every
4x4 contingency table is one ``bincount``. Tables are kept per question, so a bootstrap
resample of questions is one matrix product, and the statistics of all resamples come
from the stacked 4x4 tables through the vectorised ``table_*`` functions of ``_stats``.

**Against the reference labels**, on the labels a judge was and was not fitted on. When a
run has the reference judge (``gamut/reference``: the bundled sample's reference labels,
written with the sample, replayed as a judge), each other judge's verdicts are compared
with those labels separately on the two halves of the sample (``data.TUNING_QUESTIONS``):
the offline judge's threshold was fitted on the tuning half, so only its held-out figure
says how it does on labels it was not tuned on. Each row also counts what the labels mark
``contradicts`` and how the judge graded those checks: a judge that matches words cannot
see a false statement, and this is where it shows. Intervals resample the questions of
the half (six in the sample) with a bootstrap of their own, derived from the report's
seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations, permutations

import numpy as np
import numpy.typing as npt
import pandas as pd

from gamut_eval.analysis._rundata import ScoreCube, category_codes
from gamut_eval.analysis._stats import (
    VERDICT_ORDER,
    Bootstrap,
    table_accuracy,
    table_alpha_ordinal,
    table_kappa,
)
from gamut_eval.analysis._tables import Count, Rate, Row, Stat, estimate, number
from gamut_eval.data import HELD_OUT, TUNING, TUNING_QUESTIONS, label_part
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.judge import OFFLINE_JUDGE, REFERENCE_JUDGE
from gamut_eval.scoring import Verdict

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
_V = len(VERDICT_ORDER)


class CheckAgreementRow(Row):
    """Agreement of judges' verdicts on the same checks of the same responses."""

    setting: str
    """Setting."""
    scope: str
    """``pair`` (two judges) or ``all`` (every judge at once; alpha only)."""
    judge_a: str | None
    """First judge of the pair (None for ``all``)."""
    judge_b: str | None
    """Second judge of the pair (None for ``all``)."""
    checks: Count
    """(Response, check) units graded (not unscored) by both judges, or by at least two
    judges for ``all``."""
    agreement: Rate
    """Share of those units with the same verdict (pairs only)."""
    kappa: Stat
    """Cohen's kappa on the four verdicts (pairs only)."""
    kappa_low: Stat
    """Lower end of the bootstrap interval of ``kappa`` (resampling questions)."""
    kappa_high: Stat
    """Upper end of that interval."""
    alpha: Stat
    """Krippendorff's alpha with the ordinal metric, contradicts < missing <
    partially_meets < meets."""
    alpha_low: Stat
    """Lower end of the bootstrap interval of ``alpha``."""
    alpha_high: Stat
    """Upper end of that interval."""


@dataclass(frozen=True)
class UnitVerdicts:
    """Every judge's verdict code on every (response, check) unit of a run."""

    codes: npt.NDArray[np.int8]
    """``(U, J)``: index into ``VERDICT_ORDER``, -1 where the judge gave none (unscored
    or absent)."""
    setting: IntArray
    """``(U,)``: setting index of each unit (``ScoreCube.settings``)."""
    question: IntArray
    """``(U,)``: question index of each unit (``ScoreCube.questions``)."""


def _verdict_codes(column: pd.Series) -> IntArray:
    """Codes in ``VERDICT_ORDER``; -1 for null (unscored). Other strings are an error."""
    known = set(VERDICT_ORDER)
    values = column.astype("category") if column.dtype != "category" else column
    unknown = [v for v in values.cat.categories if v not in known]
    if unknown:
        raise ValidationError(
            [ErrorDetail("verdict", "verdict-value", "unknown verdict", unknown[0])]
        )
    return category_codes(values, VERDICT_ORDER)


def align_verdicts(verdicts: pd.DataFrame, cube: ScoreCube) -> UnitVerdicts:
    """Units from verdict rows (``question_id``, ``model``, ``setting``, ``judge``,
    ``check_id``, ``verdict``); rows outside the cube's axes are ignored."""
    axes = {
        "setting": cube.settings,
        "question_id": cube.questions,
        "model": cube.models,
        "judge": cube.judges,
    }
    codes = {name: category_codes(verdicts[name], axis) for name, axis in axes.items()}
    check, checks = pd.factorize(verdicts["check_id"], use_na_sentinel=True)
    verdict = _verdict_codes(verdicts["verdict"])
    keep = (verdict >= 0) & (check >= 0)
    for values in codes.values():
        keep &= values >= 0
    s, q, m = codes["setting"][keep], codes["question_id"][keep], codes["model"][keep]
    key = ((s * len(cube.questions) + q) * len(cube.models) + m) * max(len(checks), 1)
    unit, first = pd.factorize(key + np.asarray(check, dtype=np.int64)[keep])
    table = np.full((len(first), len(cube.judges)), -1, dtype=np.int8)
    table[unit, codes["judge"][keep]] = verdict[keep]
    setting_question = np.asarray(first, dtype=np.int64) // (len(cube.models) * max(len(checks), 1))
    return UnitVerdicts(
        codes=table,
        setting=setting_question // len(cube.questions),
        question=setting_question % len(cube.questions),
    )


def pair_tables(units: UnitVerdicts, a: int, b: int, n_settings: int, n_questions: int) -> IntArray:
    """``(S, Q, 4, 4)``: per setting and question, judge a's verdict (rows) against b's."""
    va, vb = units.codes[:, a].astype(np.int64), units.codes[:, b].astype(np.int64)
    both = (va >= 0) & (vb >= 0)
    cell = (units.setting * n_questions + units.question) * _V * _V + va * _V + vb
    counts = np.bincount(cell[both], minlength=n_settings * n_questions * _V * _V)
    return counts.reshape(n_settings, n_questions, _V, _V)


def coincidence_tables(units: UnitVerdicts, n_settings: int, n_questions: int) -> FloatArray:
    """``(S, Q, 4, 4)``: Krippendorff's coincidence matrices over all judges.

    A unit graded by m >= 2 judges adds 1 / (m - 1) for each ordered pair of its values
    (two different judges), so each unit contributes m values in total.
    """
    graded = (units.codes >= 0).sum(axis=1)
    weight = np.where(graded >= 2, 1.0 / np.maximum(graded - 1, 1), 0.0)
    base = (units.setting * n_questions + units.question) * _V * _V
    out = np.zeros(n_settings * n_questions * _V * _V)
    for a, b in permutations(range(units.codes.shape[1]), 2):
        va, vb = units.codes[:, a].astype(np.int64), units.codes[:, b].astype(np.int64)
        both = (va >= 0) & (vb >= 0) & (graded >= 2)
        out += np.bincount((base + va * _V + vb)[both], weights=weight[both], minlength=len(out))
    return out.reshape(n_settings, n_questions, _V, _V)


def _resampled(tables: npt.ArrayLike, boot: Bootstrap) -> tuple[FloatArray, FloatArray]:
    """The pooled 4x4 table ``(4, 4)`` and its value under each resample ``(B, 4, 4)``."""
    per_question = np.asarray(tables, dtype=np.float64).reshape(-1, _V * _V)
    pooled = per_question.sum(axis=0).reshape(_V, _V)
    return pooled, (boot.weights @ per_question).reshape(-1, _V, _V)


def check_agreement_rows(
    verdicts: pd.DataFrame, cube: ScoreCube, boot: Bootstrap
) -> list[CheckAgreementRow]:
    """One row per setting and pair of judges, and one for all judges when there are three
    or more. Empty with fewer than two judges."""
    if len(cube.judges) < 2:
        return []
    units = align_verdicts(verdicts, cube)
    shape = (len(cube.settings), len(cube.questions))
    rows = []
    all_judges = coincidence_tables(units, *shape) if len(cube.judges) > 2 else None
    multi = (units.codes >= 0).sum(axis=1) >= 2
    multi_units = np.bincount(units.setting[multi], minlength=len(cube.settings))
    for s, setting in enumerate(cube.settings):
        for a, b in combinations(range(len(cube.judges)), 2):
            pooled, boots = _resampled(pair_tables(units, a, b, *shape)[s], boot)
            pair = (cube.judges[a], cube.judges[b])
            rows.append(_check_row(setting, pair, int(pooled.sum()), pooled, boots, boot))
        if all_judges is not None:
            # table_alpha_ordinal reads its table T through T + T^T; half a symmetric
            # coincidence matrix gives it back exactly.
            pooled, boots = _resampled(all_judges[s] / 2, boot)
            rows.append(_check_row(setting, None, int(multi_units[s]), pooled, boots, boot))
    return rows


_Statistic = Callable[[npt.ArrayLike], FloatArray]


def _statistic(
    name: str, fn: _Statistic, pooled: FloatArray, boots: FloatArray, boot: Bootstrap
) -> dict[str, float | None]:
    """The statistic on the pooled table and its interval as cells; None without any unit."""
    if pooled.sum() == 0:
        return estimate(name, np.nan, np.nan, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = boot.interval(fn(boots))
    return estimate(name, fn(pooled), low, high)


def _check_row(
    setting: str,
    pair: tuple[str, str] | None,
    checks: int,
    pooled: FloatArray,
    boots: FloatArray,
    boot: Bootstrap,
) -> CheckAgreementRow:
    """A pair's row, or with ``pair`` None the all-judges row (``pooled``: half the
    coincidence matrix; alpha only)."""
    no_kappa = estimate("kappa", np.nan, np.nan, np.nan)
    return CheckAgreementRow(
        setting=setting,
        scope="pair" if pair else "all",
        judge_a=pair[0] if pair else None,
        judge_b=pair[1] if pair else None,
        checks=checks,
        agreement=number(table_accuracy(pooled)) if pair and checks else None,
        **(_statistic("kappa", table_kappa, pooled, boots, boot) if pair else no_kappa),
        **_statistic("alpha", table_alpha_ordinal, pooled, boots, boot),
    )


_CONTRADICTS = VERDICT_ORDER.index(Verdict.CONTRADICTS)
_MEETS = VERDICT_ORDER.index(Verdict.MEETS)
_PARTS = (HELD_OUT, TUNING)


class ReferenceAgreementRow(Row):
    """One judge's verdicts against the reference labels on one half of the sample."""

    judge: str
    """Judge model id."""
    part: str
    """``held_out`` or ``tuning``: the half of the sample's questions (the offline judge's
    threshold was fitted on the tuning half's labels)."""
    fitted_on: bool
    """Whether this judge was tuned on these labels (the offline judge on the tuning half):
    its agreement there is not evidence of how it does on new labels."""
    questions: Count
    """Questions of this half with checks graded by both."""
    checks: Count
    """(Response, check) units with a verdict from the judge and a reference label."""
    agreement: Rate
    """Share of those with the same verdict."""
    kappa: Stat
    """Cohen's kappa on the four verdicts."""
    kappa_low: Stat
    """Lower end of the bootstrap interval of ``kappa`` (this half's questions resampled)."""
    kappa_high: Stat
    """Upper end of that interval."""
    reference_contradicts: Count
    """Checks the reference labels mark ``contradicts`` (the answer states something false)."""
    found_contradicts: Count
    """Of those, the checks this judge marked ``contradicts`` too."""
    credited_contradicts: Count
    """Of those, the checks this judge marked ``meets``: a false statement given credit."""


def reference_agreement(
    verdicts: pd.DataFrame, cube: ScoreCube, boot: Bootstrap
) -> list[ReferenceAgreementRow]:
    """Two rows (held out, tuning) per judge other than the reference judge; empty when
    the run has no reference judge or no other judge."""
    if REFERENCE_JUDGE not in cube.judges or len(cube.judges) < 2:
        return []
    units = align_verdicts(verdicts, cube)
    r = cube.judges.index(REFERENCE_JUDGE)
    parts = np.array([label_part(q) for q in cube.questions])
    rows = []
    for j, judge in enumerate(cube.judges):
        if j == r:
            continue
        tables = pair_tables(units, j, r, len(cube.settings), len(cube.questions)).sum(axis=0)
        graded = tables.sum(axis=(1, 2)) > 0
        for key, part in enumerate(_PARTS):
            mask = (parts == part) & graded
            rows.append(_row(judge, part, tables[mask], boot.subset(mask, 1000 * j + key)))
    return rows


def _row(judge: str, part: str, tables: IntArray, boot: Bootstrap) -> ReferenceAgreementRow:
    pooled, boots = _resampled(tables, boot)
    total = int(pooled.sum())
    return ReferenceAgreementRow(
        judge=judge,
        part=part,
        fitted_on=judge == OFFLINE_JUDGE and part == TUNING,
        questions=len(tables),
        checks=total,
        agreement=number(table_accuracy(pooled)) if total else None,
        **_statistic("kappa", table_kappa, pooled, boots, boot),
        reference_contradicts=int(pooled[:, _CONTRADICTS].sum()),
        found_contradicts=int(pooled[_CONTRADICTS, _CONTRADICTS]),
        credited_contradicts=int(pooled[_MEETS, _CONTRADICTS]),
    )


def reference_notes(rows: list[ReferenceAgreementRow]) -> list[str]:
    """What the report says in words about the offline judge against the reference labels:
    its agreement on the held-out half, and what it cannot detect."""
    mine = {r.part: r for r in rows if r.judge == OFFLINE_JUDGE}
    held = mine.get(HELD_OUT)
    if held is None or not held.checks:
        return []
    kappa = "—" if held.kappa is None else f"{held.kappa:.2f}"
    notes = [
        f"{OFFLINE_JUDGE} agrees with {REFERENCE_JUDGE} on {100 * (held.agreement or 0):.1f}% "
        f"of the {held.checks} checks of the {held.questions} held-out questions (Cohen's "
        f"kappa {kappa}), labels its threshold was not fitted on (it was fitted on the other "
        f"{len(TUNING_QUESTIONS)}); the reference labels were written with the sample, not by "
        "independent raters, and the per-check agreement between judges counts both halves."
    ]
    contradicts = sum(r.reference_contradicts for r in mine.values())
    if contradicts:
        found = sum(r.found_contradicts for r in mine.values())
        credited = sum(r.credited_contradicts for r in mine.values())
        notes.append(
            f"{OFFLINE_JUDGE} matches words, so it cannot detect a false statement: of the "
            f"{contradicts} checks the reference labels mark contradicts, it marked {found} of "
            f"them contradicts and gave {credited} of them full credit."
        )
    return notes
