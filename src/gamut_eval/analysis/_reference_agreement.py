"""A judge against the sample's reference labels, on the labels it was and was not fitted on.

When a run has the reference judge (``gamut/reference``: the bundled sample's reference
labels, written with the sample, replayed as a judge), each other judge's verdicts are
compared with those labels separately on the two halves of the sample
(``data.TUNING_QUESTIONS``): the offline judge's threshold was fitted on the tuning half,
so only its held-out figure says how it does on labels it was not tuned on. Each row also
counts what the labels mark ``contradicts`` and how the judge graded those checks: a
judge that matches words cannot see a false statement, and this is where it shows.

Intervals resample the questions of the half (six in the sample) with a bootstrap of their
own, derived from the report's seed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from gamut_eval.analysis._agreement import VERDICT_ORDER, table_accuracy, table_kappa
from gamut_eval.analysis._bootstrap import Bootstrap
from gamut_eval.analysis._check_agreement import align_verdicts, pair_tables
from gamut_eval.analysis._cube import ScoreCube
from gamut_eval.analysis._tables import Count, Rate, Row, Stat, number
from gamut_eval.data import HELD_OUT, TUNING, TUNING_QUESTIONS, label_part
from gamut_eval.judge import OFFLINE_JUDGE, REFERENCE_JUDGE

__all__ = ["ReferenceAgreementRow", "reference_agreement", "reference_notes"]

_CONTRADICTS = VERDICT_ORDER.index("contradicts")
_MEETS = VERDICT_ORDER.index("meets")
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


def _row(
    judge: str, part: str, tables: npt.NDArray[np.int64], boot: Bootstrap
) -> ReferenceAgreementRow:
    pooled = tables.sum(axis=0) if len(tables) else np.zeros((4, 4), dtype=np.int64)
    total = int(pooled.sum())
    kappa = low = high = None
    if total:
        resampled = (boot.weights @ tables.reshape(len(tables), -1)).reshape(-1, 4, 4)
        with np.errstate(invalid="ignore", divide="ignore"):
            bounds = boot.interval(table_kappa(resampled))
        kappa, low, high = number(table_kappa(pooled)), number(bounds[0]), number(bounds[1])
    return ReferenceAgreementRow(
        judge=judge,
        part=part,
        fitted_on=judge == OFFLINE_JUDGE and part == TUNING,
        questions=len(tables),
        checks=total,
        agreement=number(table_accuracy(pooled)) if total else None,
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
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
