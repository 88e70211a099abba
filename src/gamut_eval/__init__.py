"""gamut-eval: grade open-ended answers for factual completeness with two-level meta-rubrics.

A meta-rubric of typed items (facts, strict and flexible lists, processes, relationships,
meta-insights) compiles into a flat list of binary checks; a judge grades each check with
one of four verdicts; the score penalises a contradiction more than an omission.
"""

from gamut_eval.dataset import Dataset, DatasetRecord, load_dataset
from gamut_eval.errors import GamutError, InputError, JudgeError, ValidationError
from gamut_eval.rubric import (
    Check,
    CheckKind,
    Checklist,
    CompileConfig,
    MetaRubric,
    Tier,
    compile_rubric,
    load_meta_rubric,
    meta_rubric_json_schema,
    validate_meta_rubric,
)
from gamut_eval.scoring import (
    ScoreCard,
    ScoringParams,
    TierCounts,
    Verdict,
    score_response,
    score_table,
    summarise_scores,
)

__version__ = "0.1.0"

__all__ = [
    "Check",
    "CheckKind",
    "Checklist",
    "CompileConfig",
    "Dataset",
    "DatasetRecord",
    "GamutError",
    "InputError",
    "JudgeError",
    "MetaRubric",
    "ScoreCard",
    "ScoringParams",
    "Tier",
    "TierCounts",
    "ValidationError",
    "Verdict",
    "__version__",
    "compile_rubric",
    "load_dataset",
    "load_meta_rubric",
    "meta_rubric_json_schema",
    "score_response",
    "score_table",
    "summarise_scores",
    "validate_meta_rubric",
]
