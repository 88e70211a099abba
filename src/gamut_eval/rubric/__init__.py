"""Meta-rubrics, their validation, and the compiler to flat binary checklists. Pure."""

from gamut_eval.rubric._checklist import Check, CheckKind, Checklist, CompileConfig
from gamut_eval.rubric._checklist_edits import ChecklistEdit, checklist_edits
from gamut_eval.rubric._compile import compile_rubric, coverage_thresholds
from gamut_eval.rubric._load import load_meta_rubric, validate_meta_rubric
from gamut_eval.rubric._model import (
    Evidence,
    FactItem,
    FlexibleListItem,
    MetaInsightItem,
    MetaRubric,
    NestedInsight,
    ProcessItem,
    RelationshipItem,
    StrictListItem,
    Tier,
)
from gamut_eval.rubric._render import checklist_markdown
from gamut_eval.rubric._restore import restore_superset
from gamut_eval.rubric._schema import meta_rubric_json_schema
from gamut_eval.rubric._superset import (
    RubricChange,
    diff_meta_rubrics,
    diff_rubric_sets,
    superset_problems,
)

__all__ = [
    "Check",
    "CheckKind",
    "Checklist",
    "ChecklistEdit",
    "CompileConfig",
    "Evidence",
    "FactItem",
    "FlexibleListItem",
    "MetaInsightItem",
    "MetaRubric",
    "NestedInsight",
    "ProcessItem",
    "RelationshipItem",
    "RubricChange",
    "StrictListItem",
    "Tier",
    "checklist_edits",
    "checklist_markdown",
    "compile_rubric",
    "coverage_thresholds",
    "diff_meta_rubrics",
    "diff_rubric_sets",
    "load_meta_rubric",
    "meta_rubric_json_schema",
    "restore_superset",
    "superset_problems",
    "validate_meta_rubric",
]
