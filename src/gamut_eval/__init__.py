"""gamut-eval: grade open-ended answers for factual completeness with two-level meta-rubrics.

A meta-rubric of typed items (facts, strict and flexible lists, processes, relationships,
meta-insights) compiles into a flat list of binary checks; a judge grades each check with
one of four verdicts; the score penalises a contradiction more than an omission.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

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
from gamut_eval.scoring import ScoreCard, ScoringParams, TierCounts, Verdict, score_response

if _TYPE_CHECKING:
    from gamut_eval.scoring import score_table, summarise_scores


def __getattr__(name: str) -> _Any:
    # The table functions pull in pandas and numpy: loaded on first use only, so that
    # `import gamut_eval` (and `gamut --help`) stays cheap.
    if name in ("score_table", "summarise_scores"):
        from gamut_eval import scoring

        value = getattr(scoring, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
