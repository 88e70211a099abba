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
    "compile_rubric",
    "coverage_thresholds",
    "load_meta_rubric",
    "validate_meta_rubric",
]
