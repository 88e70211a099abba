"""Meta-rubrics, their validation, and the compiler to flat binary checklists. Pure."""

from gamut_eval.rubric._checklist import Check, CheckKind, Checklist, CompileConfig
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
from gamut_eval.rubric._schema import meta_rubric_json_schema

__all__ = [
    "Check",
    "CheckKind",
    "Checklist",
    "CompileConfig",
    "Evidence",
    "FactItem",
    "FlexibleListItem",
    "MetaInsightItem",
    "MetaRubric",
    "NestedInsight",
    "ProcessItem",
    "RelationshipItem",
    "StrictListItem",
    "Tier",
    "checklist_markdown",
    "compile_rubric",
    "coverage_thresholds",
    "load_meta_rubric",
    "meta_rubric_json_schema",
    "validate_meta_rubric",
]
