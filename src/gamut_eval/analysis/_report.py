"""The report: every analysis of a run, assembled into one typed, serialisable ``Report``.

``build_report`` is a pure function of the stored results (``RunData``) and a
``ReportConfig``: the same inputs and seed give the same tables. One bootstrap weight
matrix over the run's questions is drawn from the seed and shared by every analysis, and
the model means under it are computed once; each table is a function of those.

The JSON form of a report is ``Report.model_dump_json()``: ``meta`` and one key per table
(``TABLES``), each a list of rows whose keys are documented on the row models and in
docs/report.md.

Question diversity's rows are defined here too: the analysis (``_diversity``, with its
scikit-learn and SciPy) is imported lazily, and its result is read through ``model_dump``
into these row models, so the report's JSON keys stay documented and stable here, and the
report does not break at import time when that module is absent.

The calibrated scores are ``RUN_DIR/calibrated.json`` (written by ``gamut calibrate`` and
``gamut demo``) read back, checked, and turned into rows: the estimate itself is
``gamut_eval.calibration``'s; the report shows what it wrote.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from gamut_eval import __version__
from gamut_eval._files import read_mapping
from gamut_eval.analysis._agreement import (
    CheckAgreementRow,
    ReferenceAgreementRow,
    check_agreement_rows,
    reference_agreement,
    reference_notes,
)
from gamut_eval.analysis._audit import AuditRow, audit_rows
from gamut_eval.analysis._rankings import (
    BreakdownRow,
    FamilyRow,
    JudgeGapRow,
    JudgePairRow,
    JudgeScoreRow,
    LeaderboardRow,
    LeniencyRow,
    ModalityRow,
    ModalitySummaryRow,
    RankSwapRow,
    SelfPreferenceRow,
    breakdown_rows,
    family_rows,
    judge_robustness,
    leaderboard_rows,
    modality_tables,
    model_family,
)
from gamut_eval.analysis._rundata import (
    RunData,
    ScoreCube,
    cube_from_scores,
    load_run_data,
    question_groups,
)
from gamut_eval.analysis._stats import Bootstrap
from gamut_eval.analysis._tables import Count, Rate, Row, Score, Stat, TableSpec
from gamut_eval.calibration import CALIBRATED_FILE
from gamut_eval.dataset import Dataset
from gamut_eval.errors import InputError, ValidationError
from gamut_eval.rubric import pydantic_details
from gamut_eval.scoring import ScoringParams


class DiversitySummaryRow(Row):
    """How diverse the questions are, in two numbers."""

    questions: Count
    """Questions analysed."""
    method: str
    """``tfidf`` or ``embeddings``: what similarities and clusters were computed on."""
    mean_pairwise_similarity: Stat
    """Mean cosine similarity over all pairs of distinct questions; lower is more diverse."""
    distinct_template_share: Rate
    """Distinct templates divided by questions; 1.0 when no two share a template."""
    embedding_model: str | None = None
    """The sentence-transformers model the embeddings came from (None for TF-IDF)."""
    embeddings_fallback: str | None = None
    """Why TF-IDF was used although embeddings were asked for (None otherwise)."""


class TemplateRow(Row):
    """One interrogative template (e.g. ``what is this <X>``) and how often it occurs."""

    template: str
    """The question's interrogative frame."""
    count: Count
    """Questions with this template."""
    share: Rate
    """``count`` divided by the number of questions."""
    examples: list[str]
    """Up to three of its questions."""


class NearDuplicateRow(Row):
    """Two questions whose vectors are nearly the same."""

    a: str
    """Id of the question that comes first in the dataset."""
    b: str
    """Id of the other question."""
    similarity: Stat
    """Cosine similarity of the two questions."""


class ClusterRow(Row):
    """One cluster of similar questions."""

    cluster: int
    """Cluster number; 0 is the largest."""
    size: Count
    """Questions in the cluster."""
    top_terms: list[str]
    """The terms that characterise it, most characteristic first."""
    questions: list[str]
    """Ids of its questions."""


DIVERSITY_TABLES: tuple[TableSpec, ...] = (
    TableSpec("diversity_summary", "Question diversity", DiversitySummaryRow,
              "Mean similarity of the questions and the share of distinct templates."),
    TableSpec("diversity_templates", "Interrogative templates", TemplateRow,
              "How often each question template occurs."),
    TableSpec("diversity_near_duplicates", "Near-duplicate questions", NearDuplicateRow,
              "Pairs of questions at or above the similarity threshold."),
    TableSpec("diversity_clusters", "Question clusters", ClusterRow,
              "k-means clusters of the questions and their top terms."),
)  # fmt: skip


R = TypeVar("R", bound=Row)


def _pick(row: type[R], data: dict[str, Any]) -> R:
    """The row's fields from ``data``; extra keys in the analysis' result are ignored."""
    return row.model_validate({name: data[name] for name in row.model_fields if name in data})


def diversity_rows(result: Any) -> dict[str, list[Row]]:
    """The four tables by name from a ``DiversityReport`` (anything with ``model_dump``)."""
    data = result.model_dump(mode="json")
    return {
        "diversity_summary": [_pick(DiversitySummaryRow, data)],
        "diversity_templates": [_pick(TemplateRow, t) for t in data["templates"]],
        "diversity_near_duplicates": [_pick(NearDuplicateRow, d) for d in data["near_duplicates"]],
        "diversity_clusters": [_pick(ClusterRow, c) for c in data["clusters"]],
    }


_READ = ConfigDict(extra="ignore", frozen=True)
"""calibrated.json holds more than the report shows (tier scores, differences)."""


class _FileRow(BaseModel):
    model_config = _READ

    model: str
    setting: str
    judge: str
    calibrated_with: str
    gamut: float | None
    ci_low: float | None
    ci_high: float | None
    naive_judge: float | None
    naive_calibrated_with: float | None
    n_answers: Annotated[int, Field(ge=0)]
    n_calibration: Annotated[int, Field(ge=0)]
    width_ratio: float | None = None


class _File(BaseModel):
    model_config = _READ

    judge: str
    calibrated_with: str
    confidence: Annotated[float, Field(gt=0, lt=1)]
    population: Literal["finite", "infinite"] = "finite"
    n_questions: Annotated[int, Field(ge=0)]
    sample: list[str]
    notes: list[str] = []
    rows: list[_FileRow]


class CalibratedRow(Row):
    """One model and setting: the cheap judge's score corrected by the strong judge's on a
    random sample of questions (``gamut calibrate``; docs/method.md, calibrated scores)."""

    setting: str
    """``multimodal`` or ``text_only``."""
    model: str
    """The answering model."""
    gamut: Score
    """The calibrated Gamut score (power-tuned prediction-powered mean over questions)."""
    gamut_low: Score
    """Low end of its interval: Student's t at ``confidence``, not a bootstrap interval."""
    gamut_high: Score
    """High end of its interval."""
    naive_judge: Score
    """The cheap judge's score of every answer, uncorrected."""
    naive_calibrated_with: Score
    """The strong judge's score of the sampled answers alone."""
    n_answers: Count
    """Answers the cheap judge scored."""
    n_calibration: Count
    """Answers in the calibration sample (one per sampled question)."""
    width_ratio: Stat
    """The interval's width over that of the strong judge's sample alone (under 1: the
    cheap judge narrowed it)."""
    judge: str
    """The cheap judge."""
    calibrated_with: str
    """The strong judge, or the verdict file of people's labels."""
    confidence: float
    """Coverage of the interval."""
    population: str
    """``finite``: the target is the strong judge's score on the run's questions;
    ``infinite``: on the larger pool they were drawn from."""
    n_questions: Count
    """Questions in the run."""
    sample_questions: Count
    """Questions in the calibration sample."""


def calibrated_rows(
    run_dir: Path | None, models: list[str], settings: list[str], notes: list[str]
) -> list[CalibratedRow]:
    """Rows of ``RUN_DIR/calibrated.json`` when present, for the run's ``models`` and
    ``settings``; a note says why when it cannot be read or does not match the run."""
    if run_dir is None or not (run_dir / CALIBRATED_FILE).is_file():
        return []
    path = run_dir / CALIBRATED_FILE
    left_out = f"{path} left out: "
    try:
        data = _File.model_validate(
            read_mapping(path, "calibrated-object", "calibrated.json holds one JSON object")
        )
    except pydantic.ValidationError as exc:
        problems = ValidationError([d.in_file(path) for d in pydantic_details(exc)])
        why = f"it is not calibrated scores as gamut calibrate writes them ({problems})"
        notes.append(left_out + why)
        return []
    except InputError as exc:
        notes.append(left_out + str(exc))
        return []
    foreign = sorted({f"{r.model} ({r.setting})" for r in data.rows
                      if r.model not in models or r.setting not in settings})  # fmt: skip
    if foreign:
        notes.append(
            left_out + f"its models are not this run's ({', '.join(foreign[:3])}); "
            "run gamut calibrate again"
        )
        return []
    notes += [f"calibrated scores: {note}" for note in data.notes]
    shared = data.model_dump(include={"confidence", "population", "n_questions"})
    return [
        CalibratedRow(
            **r.model_dump(exclude={"ci_low", "ci_high"}),
            **shared,
            gamut_low=r.ci_low,
            gamut_high=r.ci_high,
            sample_questions=len(data.sample),
        )
        for r in sorted(data.rows, key=lambda r: (r.setting, -(r.gamut or 0.0), r.model))
    ]


class ReportConfig(BaseModel):
    """How a report is computed; recorded in its ``meta``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    seed: int = 0
    """Seed of the bootstrap resamples: the same seed gives the same intervals."""
    resamples: Annotated[int, Field(ge=1)] = 1000
    """Bootstrap resamples of the questions."""
    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95
    """Coverage of the percentile intervals."""
    families: dict[str, str] = {}
    """Model id or glob pattern -> family, overriding the provider part of ids."""
    families_file: str | None = None
    """Where ``families`` was read from, if anywhere."""
    embeddings: str | None = None
    """Question diversity on sentence embeddings from this sentence-transformers model (a
    Hub name such as ``sentence-transformers/all-MiniLM-L6-v2`` or a local folder) instead
    of TF-IDF; TF-IDF (with a note) when the ``embeddings`` extra or the model is missing."""


class ReportMeta(BaseModel):
    """What the report was computed from and how."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    run_dir: str | None
    """The run folder, when the report was built from one."""
    created_at: str
    """When the report was built (UTC, ISO 8601)."""
    gamut_eval_version: str
    """Version of gamut-eval that built it."""
    seed: int
    """Seed of the bootstrap."""
    resamples: int
    """Bootstrap resamples."""
    confidence: float
    """Coverage of every ``*_low`` / ``*_high`` interval."""
    interval_method: str
    """How intervals are computed."""
    scoring: ScoringParams
    """Lambda, mu and tier weights the scores were computed with (from run.json)."""
    settings: list[str]
    """Settings in the run."""
    judges: list[str]
    """Judges, in the run's order."""
    primary_judge: str
    """The first judge: the one heatmaps and the terminal summary show."""
    models: list[str]
    """Models, sorted."""
    questions: int
    """Questions with at least one score."""
    responses: int
    """Judged responses (rows of scores.jsonl)."""
    dataset: str | None
    """The dataset the questions' domains, popularity and texts came from."""
    families_file: str | None
    """The --families mapping, if one was given."""
    notes: list[str]
    """What the report leaves out or cannot show, and why (and, with the reference judge,
    the offline judge's held-out agreement and what it cannot detect)."""


_INTERVALS = "percentile bootstrap over questions, one paired set of resamples for all tables"

TABLES: tuple[TableSpec, ...] = (
    TableSpec("leaderboard", "Leaderboard", LeaderboardRow,
              "Table 1: Gamut score per model, setting and judge, with tier scores and verdicts."),
    TableSpec("breakdowns", "Scores by domain and popularity", BreakdownRow,
              "Each model's score on the questions of each domain and popularity band."),
    TableSpec("calibrated", "Calibrated scores", CalibratedRow,
              "A cheap judge's score of every answer corrected by a strong judge's (or "
              "people's) on a random sample of questions, with an interval valid however "
              "wrong the cheap judge is (RUN_DIR/calibrated.json, from gamut calibrate or a "
              "calibrated gamut run)."),
    TableSpec("judge_scores", "Scores per judge", JudgeScoreRow,
              "Table 2: each model's score under each judge."),
    TableSpec("judge_pairs", "Ranking agreement between judges", JudgePairRow,
              "Kendall's tau-b between two judges' rankings, swaps and gaps."),
    TableSpec("judge_gaps", "Per-model gaps between judges", JudgeGapRow,
              "One judge's score minus another's for each model."),
    TableSpec("leniency", "Judge leniency", LeniencyRow,
              "How much higher each judge scores than the others."),
    TableSpec("self_preference", "Self-preference", SelfPreferenceRow,
              "How much more a judge favours its own family than the other judges do."),
    TableSpec("families", "Model families", FamilyRow,
              "The family of every model and judge, for self-preference."),
    TableSpec("check_agreement", "Per-check agreement between judges", CheckAgreementRow,
              "Cohen's kappa and ordinal Krippendorff's alpha on the verdicts."),
    TableSpec("reference_agreement", "Against the reference labels, held out and tuning",
              ReferenceAgreementRow,
              "Each judge against gamut/reference (the sample's reference labels, written "
              "with it) on each half of the sample; the offline judge was fitted on the "
              "tuning half."),
    TableSpec("modality", "Text-only minus multimodal", ModalityRow,
              "Table 3: each model's score with and without the image."),
    TableSpec("modality_summary", "Does the ranking survive removing the image?",
              ModalitySummaryRow, "Rank correlation of the two settings and the gap's spread."),
    TableSpec("rank_swaps", "Swapped pairs", RankSwapRow,
              "Pairs of models two rankings (judges or settings) order differently."),
    *DIVERSITY_TABLES,
    TableSpec("judge_audit", "Judge audit", AuditRow,
              "The latest adversarial probe audit of a judge (RUN_DIR/audit.json)."),
)  # fmt: skip
"""Every table of a report, in report order; each name is a key of ``Report``."""


class Report(BaseModel):
    """Every analysis of one run; its JSON has these keys (rows documented per field):

    ``meta`` (``ReportMeta``: how and from what it was computed), ``leaderboard``,
    ``breakdowns`` (Table 1 and its domain/popularity breakdowns); ``calibrated`` (the
    calibrated scores of ``RUN_DIR/calibrated.json``, empty without one; its intervals are
    the calibration's, not bootstrap intervals); ``judge_scores``,
    ``judge_pairs``, ``judge_gaps``, ``leniency``, ``self_preference``, ``families``,
    ``check_agreement`` (Table 2, empty with one judge); ``reference_agreement`` (each
    judge against the sample's reference labels, per half; empty without
    ``gamut/reference``); ``modality``,
    ``modality_summary`` (Table 3, empty without both settings); ``rank_swaps`` (pairs two
    rankings order differently, for judges and settings); ``diversity_summary``,
    ``diversity_templates``, ``diversity_near_duplicates``, ``diversity_clusters``
    (Section 6, empty without the dataset); ``judge_audit`` (the latest ``gamut
    audit-judge`` saved as ``RUN_DIR/audit.json``, empty without one). Scores are on the
    raw scale [-1, 1]; every ``X_low``/``X_high`` is the bootstrap interval of ``X``;
    undefined values are null.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    meta: ReportMeta
    leaderboard: list[LeaderboardRow]
    breakdowns: list[BreakdownRow]
    judge_scores: list[JudgeScoreRow]
    judge_pairs: list[JudgePairRow]
    judge_gaps: list[JudgeGapRow]
    leniency: list[LeniencyRow]
    self_preference: list[SelfPreferenceRow]
    families: list[FamilyRow]
    check_agreement: list[CheckAgreementRow]
    modality: list[ModalityRow]
    modality_summary: list[ModalitySummaryRow]
    rank_swaps: list[RankSwapRow]
    diversity_summary: list[DiversitySummaryRow]
    diversity_templates: list[TemplateRow]
    diversity_near_duplicates: list[NearDuplicateRow]
    diversity_clusters: list[ClusterRow]
    judge_audit: list[AuditRow] = Field(default_factory=list)
    reference_agreement: list[ReferenceAgreementRow] = Field(default_factory=list)
    calibrated: list[CalibratedRow] = Field(default_factory=list)
    _run: RunData | None = PrivateAttr(default=None)
    """The stored results the report was built from, kept so the HTML page's drill-down
    uses what is loaded instead of reading the run folder again (not serialised)."""

    @property
    def run(self) -> RunData | None:
        """The stored results this report was built from, when built in this process."""
        return self._run

    def table(self, name: str) -> list[Row]:
        """The rows of the table called ``name`` (one of ``TABLES``)."""
        rows: list[Row] = getattr(self, name)
        return rows


def build_report(run: RunData, config: ReportConfig | None = None) -> Report:
    """Every table of the report, from stored results only."""
    config = config or ReportConfig()
    if run.scores.empty:
        raise InputError("no scores to report on")
    cube = cube_from_scores(run.scores, run.judges)
    boot = Bootstrap.draw(len(cube.questions), config.resamples, config.seed, config.confidence)
    means = boot.means(cube.gamut)
    notes = list(run.notes)
    ids = (*cube.models, *cube.judges)
    families = {m: model_family(m, config.families) for m in ids}
    robustness = judge_robustness(cube, means, boot, families)
    modality = modality_tables(cube, means, boot)
    rank_swaps = [*robustness.pop("rank_swaps"), *modality.pop("rank_swaps")]
    check_agreement, against_reference = [], []
    if len(cube.judges) >= 2 and run.verdicts is not None:
        check_agreement = check_agreement_rows(run.verdicts, cube, boot)
        against_reference = reference_agreement(run.verdicts, cube, boot)
        notes += reference_notes(against_reference)
    diversity = _diversity(run.dataset, notes, config.embeddings)
    audit = audit_rows(run.run_dir, notes)
    calibrated = calibrated_rows(run.run_dir, list(cube.models), list(cube.settings), notes)
    notes += _coverage_notes(cube)
    report = Report(
        meta=_meta(run, config, cube, notes),
        leaderboard=leaderboard_rows(cube, means, boot),
        breakdowns=breakdown_rows(cube, question_groups(run.dataset, cube.questions), boot),
        **robustness,
        families=family_rows(ids, config.families) if len(cube.judges) >= 2 else [],
        check_agreement=check_agreement,
        **modality,
        rank_swaps=rank_swaps,
        **diversity,
        judge_audit=audit,
        reference_agreement=against_reference,
        calibrated=calibrated,
    )
    report._run = run
    return report


def report_for_run(
    run_dir: str | Path,
    config: ReportConfig | None = None,
    dataset: str | Path | None = None,
    *,
    explanations: bool = False,
) -> Report:
    """``build_report`` on the run folder ``run_dir`` (see ``load_run_data``).

    ``explanations``: load the judges' explanations with the verdicts, in the same single
    read, for the HTML page's drill-down (which then reads nothing again)."""
    run = load_run_data(run_dir, dataset, explanations=explanations)
    return build_report(run, config)


def _meta(run: RunData, config: ReportConfig, cube: ScoreCube, notes: list[str]) -> ReportMeta:
    return ReportMeta(
        run_dir=str(run.run_dir) if run.run_dir else None,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        gamut_eval_version=__version__,
        seed=config.seed,
        resamples=config.resamples,
        confidence=config.confidence,
        interval_method=_INTERVALS,
        scoring=run.params,
        settings=list(cube.settings),
        judges=list(cube.judges),
        primary_judge=cube.judges[0],
        models=list(cube.models),
        questions=len(cube.questions),
        responses=int(cube.present.sum()),
        dataset=str(run.dataset.path) if run.dataset else None,
        families_file=config.families_file,
        notes=notes,
    )


def _coverage_notes(cube: ScoreCube) -> list[str]:
    notes = []
    if len(cube.judges) < 2:
        notes.append(
            f"one judge ({cube.judges[0]}): judge robustness needs the same responses scored "
            "by several judges (`gamut run ... --judge A --judge B`)"
        )
    if cube.setting_index("multimodal") is None or cube.setting_index("text_only") is None:
        notes.append("modality needs both the multimodal and the text_only setting")
    return notes


def _diversity_module() -> ModuleType | None:
    """The question-diversity module, imported lazily: it is optional in a report."""
    name = "gamut_eval.analysis._diversity"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def _diversity(
    dataset: Dataset | None, notes: list[str], embeddings: str | None = None
) -> dict[str, list[Row]]:
    empty: dict[str, list[Row]] = {spec.name: [] for spec in DIVERSITY_TABLES}
    if dataset is None:
        return empty
    module = _diversity_module()
    if module is None:
        notes.append("question diversity is not available in this version of gamut-eval")
        return empty
    try:
        result = module.question_diversity(dataset, embeddings=embeddings or False)
        if getattr(result, "embeddings_fallback", None):
            notes.append(f"question diversity: {result.embeddings_fallback}")
        return diversity_rows(result)
    except (pydantic.ValidationError, AttributeError, KeyError, TypeError) as exc:
        notes.append(
            f"question diversity left out: its result did not have the expected form ({exc})"
        )
        return empty
