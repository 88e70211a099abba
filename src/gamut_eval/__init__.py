"""gamut-eval: grade open-ended answers for factual completeness with two-level meta-rubrics.

A meta-rubric of typed items (facts, strict and flexible lists, processes, relationships,
meta-insights) compiles into a flat list of binary checks; a judge grades each check with
one of four verdicts; the score penalises a contradiction more than an omission.

The names below are imported on first use (``from gamut_eval import score_table`` works as
usual): importing ``gamut_eval`` alone, as every ``gamut`` command does, stays cheap, and the
scoring names do not bring pandas in until they are used.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports
from gamut_eval.errors import GamutError, InputError, JudgeError, ValidationError

if _typing.TYPE_CHECKING:
    from gamut_eval._run_tables import RunTables, load_run
    from gamut_eval.dataset import Dataset, DatasetRecord, load_dataset
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

_LAZY: dict[str, str] = {
    **dict.fromkeys(("Dataset", "DatasetRecord", "load_dataset"), "gamut_eval.dataset"),
    **dict.fromkeys(("RunTables", "load_run"), "gamut_eval._run_tables"),
    **dict.fromkeys(
        (
            "Check",
            "CheckKind",
            "Checklist",
            "CompileConfig",
            "MetaRubric",
            "Tier",
            "compile_rubric",
            "load_meta_rubric",
            "meta_rubric_json_schema",
            "validate_meta_rubric",
        ),
        "gamut_eval.rubric",
    ),
    **dict.fromkeys(
        (
            "ScoreCard",
            "ScoringParams",
            "TierCounts",
            "Verdict",
            "score_response",
            "score_table",
            "summarise_scores",
        ),
        "gamut_eval.scoring",
    ),
}
"""Public name -> the module it comes from, imported when the name is first used."""


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())


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
    "RunTables",
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
    "load_run",
    "meta_rubric_json_schema",
    "score_response",
    "score_table",
    "summarise_scores",
    "validate_meta_rubric",
]
