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
from gamut_eval.errors import (
    GamutError as GamutError,
    InputError as InputError,
    JudgeError as JudgeError,
    ValidationError as ValidationError,
)

if _typing.TYPE_CHECKING:
    from gamut_eval.dataset import (
        Dataset as Dataset,
        DatasetRecord as DatasetRecord,
        load_dataset as load_dataset,
        write_dataset as write_dataset,
    )
    from gamut_eval.records import RunTables as RunTables, load_run as load_run
    from gamut_eval.rubric import (
        Check as Check,
        CheckKind as CheckKind,
        Checklist as Checklist,
        CompileConfig as CompileConfig,
        MetaRubric as MetaRubric,
        Tier as Tier,
        compile_rubric as compile_rubric,
        load_meta_rubric as load_meta_rubric,
        meta_rubric_json_schema as meta_rubric_json_schema,
        validate_meta_rubric as validate_meta_rubric,
    )
    from gamut_eval.scoring import (
        ScoreCard as ScoreCard,
        ScoringParams as ScoringParams,
        TierCounts as TierCounts,
        Verdict as Verdict,
        score_response as score_response,
        score_table as score_table,
        summarise_scores as summarise_scores,
    )

__version__ = "0.1.0"

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
