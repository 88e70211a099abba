"""A judge against reference labels (human ones, or the sample's): agreement and score shift.

Rows of the two files are matched on (question, model, setting, check). Only checks both
graded are compared; unmatched and unscored rows are counted and shown, never silently
dropped, because a judge that skips the hard checks would otherwise look better.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gamut_eval.analysis import (
    VERDICT_ORDER,
    AgreementEstimates,
    bootstrap_agreement,
    confusion_matrix,
)
from gamut_eval.dataset import Dataset
from gamut_eval.errors import InputError
from gamut_eval.quality._rows import CheckRef, Verdicts, load_verdicts, model_scores
from gamut_eval.rubric import TIERS, Check, CheckKind, Checklist
from gamut_eval.scoring import ScoringParams

__all__ = [
    "AgreementReport",
    "BootstrapConfig",
    "GroupAgreement",
    "Matching",
    "ScoreShift",
    "agreement_report",
]

_FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
_EXAMPLES = 10


class BootstrapConfig(BaseModel):
    """How the intervals were drawn."""

    model_config = _FROZEN

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


class ScoreShift(BaseModel):
    """One model and setting scored from the gold labels and from the judge's verdicts."""

    model_config = _FROZEN

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


class Matching(BaseModel):
    """How the rows of the two files lined up."""

    model_config = _FROZEN

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


class AgreementReport(BaseModel):
    """``gamut agreement``: a judge's verdicts against reference (gold) verdicts: human
    labels, or by default the sample's reference labels (written with the sample)."""

    model_config = _FROZEN

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
    """Per model and setting, on the compared checks."""
    mean_abs_score_shift: float | None
    """Mean of ``|difference|`` over the models and settings that have both scores."""


def _ref_list(ref: CheckRef) -> list[str]:
    return [ref.question_id, ref.model, ref.setting, ref.check_id]


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
            name: [_ref_list(r) for r in refs[:_EXAMPLES]]
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


def _by(
    refs: list[CheckRef],
    label: Callable[[CheckRef], str],
    order: list[str],
    compare: Callable[[list[CheckRef]], GroupAgreement],
) -> dict[str, GroupAgreement]:
    """``compare`` on each group of ``refs`` by ``label``, groups in ``order``."""
    groups: dict[str, list[CheckRef]] = {}
    for ref in refs:
        groups.setdefault(label(ref), []).append(ref)
    return {name: compare(groups[name]) for name in order if name in groups}


def _score_shift(
    refs: list[CheckRef],
    judge: Verdicts,
    gold: Verdicts,
    checklists: Mapping[str, Checklist],
    params: ScoringParams | None,
) -> list[ScoreShift]:
    human = model_scores({r: gold[r] for r in refs}, checklists, params)
    machine = model_scores({r: judge[r] for r in refs}, checklists, params)
    shifts = []
    for model, setting in sorted(human):
        h, j = human[(model, setting)], machine.get((model, setting))
        difference = None if h is None or j is None else j - h
        shifts.append(
            ScoreShift(model=model, setting=setting, human=h, judge=j, difference=difference)
        )
    return shifts


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

    Raises ``ValidationError`` for malformed rows and ``InputError`` when no check has a
    verdict in both files (nothing to compare: probably files about different answers).
    """
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
            "the verdicts): are they about the same answers? Pass the right --gold and --dataset"
        )
    config = BootstrapConfig(n_resamples=n_resamples, seed=seed, confidence=confidence)
    compare = partial(_group, judge=machine, gold=gold, config=config)
    kinds = [k.value for k in CheckKind]
    tiers = [t.value for t in TIERS]
    shifts = _score_shift(refs, machine, gold, checklists, params)
    differences = [abs(s.difference) for s in shifts if s.difference is not None]
    return AgreementReport(
        verdicts=str(verdicts_path),
        gold=str(gold_path),
        dataset=str(dataset.path),
        judge=judge,
        bootstrap=config,
        matching=matching,
        overall=compare(refs),
        by_kind=_by(refs, lambda r: checks[r.question_id][r.check_id].kind.value, kinds, compare),
        by_tier=_by(refs, lambda r: checks[r.question_id][r.check_id].tier.value, tiers, compare),
        score_shift=shifts,
        mean_abs_score_shift=sum(differences) / len(differences) if differences else None,
    )
