"""How the offline judge's threshold is fitted, and how well it does on labels it never saw.

The offline judge (``gamut/offline``) has one tunable number, ``MEETS_AT``: the share of a
check's content words an answer must contain. It is fitted on the reference labels of the
sample's tuning half (``data.TUNING_QUESTIONS``) only: every value of ``GRID`` is scored
by Cohen's kappa against those labels and the best one is kept (the first of equals).
The other half's labels are held out, so the agreement reported on them is what the
judge does on labels its threshold was not chosen on. (The judge's word lists and stemming
were written with the whole sample in view, so even the held-out figure may flatter it.)

    python -m gamut_eval.quality._offline_fit     # the grid on the tuning half, and the fit
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gamut_eval.analysis import accuracy, cohen_kappa
from gamut_eval.data import HELD_OUT, TUNING, label_part, sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import MEETS_AT, grade_check
from gamut_eval.rubric import Check

__all__ = [
    "GRID",
    "LabelledCheck",
    "PartAgreement",
    "fit_meets_at",
    "offline_agreement",
    "sample_labels",
]

GRID: tuple[float, ...] = tuple(round(0.30 + 0.05 * i, 2) for i in range(11))
"""The thresholds tried: 0.30, 0.35, ..., 0.80."""


@dataclass(frozen=True, slots=True)
class LabelledCheck:
    """One (answer, check) pair of the sample with its reference label."""

    question_id: str
    answer: str
    check: Check
    label: str


@dataclass(frozen=True, slots=True)
class PartAgreement:
    """The offline judge against the reference labels of one part of the sample."""

    part: str
    questions: int
    checks: int
    accuracy: float
    kappa: float


def sample_labels(folder: Path | None = None) -> list[LabelledCheck]:
    """Every labelled (answer, check) pair of the bundled sample (or a folder like it)."""
    folder = folder or sample_dir()
    dataset = load_dataset(folder / "dataset.jsonl")
    checks = {(q, c.id): c for q, cl in dataset.checklists().items() for c in cl.checks}
    answers = {}
    for line in (folder / "responses.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        answers[(row["question_id"], row["model"], row["setting"])] = row["response"]
    out = []
    for line in (folder / "gold.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        qid = row["question_id"]
        answer = answers[(qid, row["model"], row["setting"])]
        out.append(LabelledCheck(qid, answer, checks[(qid, row["check_id"])], row["verdict"]))
    return out


def _kappa(labelled: Iterable[LabelledCheck], meets_at: float) -> float:
    rows = list(labelled)
    graded = [grade_check(r.answer, r.check, meets_at=meets_at)[0] for r in rows]
    return cohen_kappa([r.label for r in rows], graded)


def fit_meets_at(
    labelled: Iterable[LabelledCheck] | None = None, grid: Iterable[float] = GRID
) -> tuple[float, dict[float, float]]:
    """The threshold with the highest kappa on the tuning half's labels, and every kappa
    of the grid. Labels of held-out questions in ``labelled`` are ignored."""
    tuning = [r for r in (labelled or sample_labels()) if label_part(r.question_id) == TUNING]
    kappas = {t: _kappa(tuning, t) for t in grid}
    best = max(kappas, key=lambda t: (kappas[t], -t))
    return best, kappas


def offline_agreement(
    labelled: Iterable[LabelledCheck] | None = None, meets_at: float = MEETS_AT
) -> dict[str, PartAgreement]:
    """The offline judge's accuracy and kappa on each part (``held_out``, ``tuning``)."""
    rows = list(labelled or sample_labels())
    out = {}
    for part in (HELD_OUT, TUNING):
        mine = [r for r in rows if label_part(r.question_id) == part]
        graded = [grade_check(r.answer, r.check, meets_at=meets_at)[0] for r in mine]
        labels = [r.label for r in mine]
        out[part] = PartAgreement(
            part=part,
            questions=len({r.question_id for r in mine}),
            checks=len(mine),
            accuracy=accuracy(labels, graded),
            kappa=cohen_kappa(labels, graded),
        )
    return out


def main() -> None:
    best, kappas = fit_meets_at()
    for threshold, kappa in kappas.items():
        print(f"MEETS_AT {threshold:.2f}: kappa {kappa:.4f} on the tuning half")
    print(f"fitted: {best:.2f} (in the code: {MEETS_AT:.2f})")
    for part in offline_agreement().values():
        print(
            f"{part.part}: {part.questions} questions, {part.checks} checks, "
            f"agreement {100 * part.accuracy:.1f}%, kappa {part.kappa:.3f}"
        )


if __name__ == "__main__":
    main()
