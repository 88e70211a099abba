"""Agreement with reference labels: a judge's report against them, and the offline judge's fit.

``agreement_report`` puts a judge against reference labels (human ones, or the sample's):
agreement and score shift. Rows of the two files are matched on (question, model, setting,
check). Only checks both graded are compared; unmatched and unscored rows are counted and
shown, never silently dropped, because a judge that skips the hard checks would otherwise
look better.

The offline judge (``gamut/offline``) has one tunable number, ``MEETS_AT``: the share of a
check's content words an answer must contain. It is fitted on the reference labels of the
sample's tuning half (``data.TUNING_QUESTIONS``) only: every value of ``GRID`` is scored
by Cohen's kappa against those labels and the best one is kept (the first of equals).
The other half's labels are held out, so the agreement reported on them is what the
judge does on labels its threshold was not chosen on. (The judge's word lists and stemming
were written with the whole sample in view, so even the held-out figure may flatter it.)

    python -m gamut_eval.quality._agreement     # the grid on the tuning half, and the fit
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass
from functools import partial
from pathlib import Path

from gamut_eval.analysis import (
    VERDICT_ORDER,
    AgreementEstimates,
    accuracy,
    bootstrap_agreement,
    cohen_kappa,
    confusion_matrix,
)
from gamut_eval.data import HELD_OUT, TUNING, label_part, sample_dir
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.judge import MEETS_AT, grade_check
from gamut_eval.quality._verdicts import (
    CheckRef,
    Frozen,
    Verdicts,
    load_verdicts,
    model_scores,
    tier_and_kind_groups,
    verdict_judges,
)
from gamut_eval.rubric import Check, Checklist
from gamut_eval.scoring import ScoringParams

_EXAMPLES = 10


class BootstrapConfig(Frozen):
    """How the intervals were drawn."""

    n_resamples: int
    """Bootstrap resamples drawn."""
    seed: int
    """Seed of ``numpy.random.default_rng``: the same seed gives the same intervals."""
    confidence: float
    """Coverage of the percentile intervals (0.95: the 2.5th to 97.5th percentiles)."""
    unit: str = "question_id"
    """What is resampled: whole questions, since verdicts on one question's checks are
    correlated (see ``bootstrap_agreement``)."""


class GroupAgreement(AgreementEstimates):
    """Agreement on one group of checks (all, one check kind, or one tier)."""

    confusion: list[list[int]]
    """Counts; rows are the gold verdict and columns the judge's, both in
    ``AgreementReport.labels`` order."""


class ScoreShift(Frozen):
    """One model and setting scored from the gold labels and from the judge's verdicts."""

    model: str
    setting: str
    """``multimodal`` or ``text_only``."""
    human: float | None
    """Mean Gamut score (a fraction in [-1, 1], not x100) from the gold verdicts."""
    judge: float | None
    """The same from the judge's verdicts, on the same checks."""
    difference: float | None
    """``judge - human``: positive when the judge is more generous than the reference
    verdicts (``human`` names the reference side, human labels or the sample's)."""


class Matching(Frozen):
    """How the rows of the two files lined up."""

    judge_rows: int
    """Rows read from the verdicts file (of the selected judge)."""
    gold_rows: int
    """Rows read from the gold file."""
    matched: int
    """Checks present in both files."""
    compared: int
    """Matched checks with a verdict in both files (the ones the statistics use)."""
    unscored_judge: int
    """Matched checks the judge left unscored (null verdict): excluded."""
    unscored_gold: int
    """Matched checks with a null gold verdict: excluded."""
    only_judge: int
    """Judge rows with no gold row."""
    only_gold: int
    """Gold rows with no judge row."""
    examples: dict[str, list[list[str]]]
    """Up to ten [question_id, model, setting, check_id] per kind of problem
    (``only_judge``, ``only_gold``, ``unscored``)."""


class AgreementReport(Frozen):
    """``gamut agreement``: a judge's verdicts against reference (gold) verdicts: human
    labels, or by default the sample's reference labels (written with the sample)."""

    verdicts: str
    """The judge's verdict rows file."""
    gold: str
    """The reference verdict rows file (``--gold``)."""
    dataset: str
    """The dataset whose checklists give each check's kind and tier."""
    judge: str | None
    """The judge whose rows were selected, when the file holds several."""
    labels: tuple[str, ...] = VERDICT_ORDER
    """Verdict order of the confusion matrices, and of the ordinal alpha's scale."""
    bootstrap: BootstrapConfig
    """How the intervals were drawn."""
    matching: Matching
    """Which rows were compared, and which were left out."""
    overall: GroupAgreement
    """Every compared check."""
    by_kind: dict[str, GroupAgreement]
    """Per check kind (``fact``, ``list_item``...), kinds present only."""
    by_tier: dict[str, GroupAgreement]
    """Per importance tier, tiers present only."""
    score_shift: list[ScoreShift]
    """Per model and setting, over the complete answers (``score_shift_answers``), on the
    checks both sides graded (a check either left unscored is unscored on both)."""
    mean_abs_score_shift: float | None
    """Mean of ``|difference|`` over the models and settings that have both scores."""
    score_shift_answers: int = 0
    """Answers (question, model, setting) with a row for every check of their checklist in
    both files: a Gamut score needs them all, so only these are scored."""
    score_shift_left_out: int = 0
    """Answers with rows in either file that lack a row for some check in one of them: left
    out of the score shift (the agreement statistics still use their matched checks)."""


def _matching(judge: Verdicts, gold: Verdicts, compared: list[CheckRef]) -> Matching:
    matched = [r for r in judge if r in gold]
    unscored = [r for r in matched if judge[r] is None or gold[r] is None]
    only_judge = [r for r in judge if r not in gold]
    only_gold = [r for r in gold if r not in judge]
    return Matching(
        judge_rows=len(judge),
        gold_rows=len(gold),
        matched=len(matched),
        compared=len(compared),
        unscored_judge=sum(judge[r] is None for r in matched),
        unscored_gold=sum(gold[r] is None for r in matched),
        only_judge=len(only_judge),
        only_gold=len(only_gold),
        examples={
            name: [list(astuple(r)) for r in refs[:_EXAMPLES]]
            for name, refs in (
                ("only_judge", only_judge),
                ("only_gold", only_gold),
                ("unscored", unscored),
            )
            if refs
        },
    )


def _group(
    refs: list[CheckRef], judge: Verdicts, gold: Verdicts, config: BootstrapConfig
) -> GroupAgreement:
    human = [str(gold[r]) for r in refs]
    machine = [str(judge[r]) for r in refs]
    estimates = bootstrap_agreement(
        human,
        machine,
        [r.question_id for r in refs],
        n_resamples=config.n_resamples,
        seed=config.seed,
        confidence=config.confidence,
    )
    confusion = confusion_matrix(human, machine, VERDICT_ORDER)
    return GroupAgreement(**estimates.model_dump(), confusion=confusion)


def _complete_answers(
    judge: Verdicts, gold: Verdicts, checklists: Mapping[str, Checklist]
) -> tuple[list[CheckRef], int]:
    """The checks of every answer that has a row for each check of its checklist in both
    files, and how many answers with rows do not."""
    matched: dict[tuple[str, str, str], list[CheckRef]] = {}
    for ref in judge:
        if ref in gold:
            matched.setdefault((ref.question_id, ref.model, ref.setting), []).append(ref)
    answers = {(r.question_id, r.model, r.setting) for r in (*judge, *gold)}
    complete = [
        refs for answer, refs in matched.items() if len(refs) == len(checklists[answer[0]].checks)
    ]
    return [r for refs in complete for r in refs], len(answers) - len(complete)


def _score_shift(
    refs: list[CheckRef],
    judge: Verdicts,
    gold: Verdicts,
    checklists: Mapping[str, Checklist],
    params: ScoringParams | None,
) -> list[ScoreShift]:
    """Scores of complete answers (``refs``: every check of each), on the checks both
    graded: a check either side left unscored is unscored on both."""
    both = {r for r in refs if judge[r] is not None and gold[r] is not None}
    human = model_scores({r: gold[r] if r in both else None for r in refs}, checklists, params)
    machine = model_scores({r: judge[r] if r in both else None for r in refs}, checklists, params)
    shifts = []
    for model, setting in sorted(human):
        h, j = human[(model, setting)], machine.get((model, setting))
        difference = None if h is None or j is None else j - h
        shifts.append(
            ScoreShift(model=model, setting=setting, human=h, judge=j, difference=difference)
        )
    return shifts


def agreement_reports(
    verdicts_path: Path,
    gold_path: Path,
    dataset: Dataset,
    *,
    judge: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    params: ScoringParams | None = None,
) -> list[AgreementReport]:
    """``agreement_report`` for ``judge``, or, when none is named and the file holds the
    rows of several judges (a run's ``verdicts.jsonl``), one report per judge in file
    order."""
    found = verdict_judges(verdicts_path) if judge is None else []
    judges: list[str | None] = list(found) if len(found) > 1 else [judge]
    return [
        agreement_report(
            verdicts_path,
            gold_path,
            dataset,
            judge=name,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            params=params,
        )
        for name in judges
    ]


def agreement_report(
    verdicts_path: Path,
    gold_path: Path,
    dataset: Dataset,
    *,
    judge: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    params: ScoringParams | None = None,
) -> AgreementReport:
    """Compare a judge's verdict rows with gold rows over ``dataset``'s checklists.

    The statistics use every check with a verdict in both files; unmatched and unscored
    rows are counted and left out. The score shift needs every check of an answer, so it
    is computed on the answers complete in both files, and the others are counted.

    Raises ``ValidationError`` for malformed rows, and ``InputError`` when no check has a
    verdict in both files (nothing to compare: probably files about different answers) or
    when no ``judge`` is named and the file holds the rows of several
    (``agreement_reports`` gives one report per judge).
    """
    if judge is None:
        judges = verdict_judges(verdicts_path)
        if len(judges) > 1:
            raise InputError(
                f"{verdicts_path} holds the verdicts of {len(judges)} judges "
                f"({', '.join(judges)}); choose one with judge",
                setting="judge",
            )
    checklists = dataset.checklists()
    checks: dict[str, dict[str, Check]] = {q: c.by_id() for q, c in checklists.items()}
    machine = load_verdicts(verdicts_path, checks, judge=judge)
    gold = load_verdicts(gold_path, checks)
    refs = [r for r in machine if r in gold and machine[r] is not None and gold[r] is not None]
    matching = _matching(machine, gold, refs)
    if not refs:
        raise InputError(
            f"no check has a verdict in both {verdicts_path} and {gold_path} ({matching.matched} "
            f"rows matched on question, model, setting and check; {matching.only_judge} only in "
            "the verdicts): are they about the same answers? Check the gold rows and the dataset",
            setting=("gold", "dataset"),
        )
    config = BootstrapConfig(n_resamples=n_resamples, seed=seed, confidence=confidence)
    compare = partial(_group, judge=machine, gold=gold, config=config)
    by_tier, by_kind = tier_and_kind_groups(refs, checks)
    complete, left_out = _complete_answers(machine, gold, checklists)
    shifts = _score_shift(complete, machine, gold, checklists, params)
    differences = [abs(s.difference) for s in shifts if s.difference is not None]
    return AgreementReport(
        verdicts=str(verdicts_path),
        gold=str(gold_path),
        dataset=str(dataset.path),
        judge=judge,
        bootstrap=config,
        matching=matching,
        overall=compare(refs),
        by_kind={name: compare(group) for name, group in by_kind.items()},
        by_tier={name: compare(group) for name, group in by_tier.items()},
        score_shift=shifts,
        mean_abs_score_shift=sum(differences) / len(differences) if differences else None,
        score_shift_answers=len({(r.question_id, r.model, r.setting) for r in complete}),
        score_shift_left_out=left_out,
    )


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
