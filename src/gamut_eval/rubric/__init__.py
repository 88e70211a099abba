"""Meta-rubrics, their validation, and the compiler to flat binary checklists. Pure."""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.rubric._checklist import (
        Check as Check,
        CheckKind as CheckKind,
        Checklist as Checklist,
        ChecklistEdit as ChecklistEdit,
        CompileConfig as CompileConfig,
        checklist_edits as checklist_edits,
        checklist_markdown as checklist_markdown,
        compile_rubric as compile_rubric,
        coverage_thresholds as coverage_thresholds,
    )
    from gamut_eval.rubric._load import (
        load_meta_rubric as load_meta_rubric,
        pydantic_details as pydantic_details,
        validate_meta_rubric as validate_meta_rubric,
    )
    from gamut_eval.rubric._model import (
        TIERS as TIERS,
        Evidence as Evidence,
        FactItem as FactItem,
        FlexibleListItem as FlexibleListItem,
        Item as Item,
        MetaInsightItem as MetaInsightItem,
        MetaRubric as MetaRubric,
        NestedInsight as NestedInsight,
        ProcessItem as ProcessItem,
        RelationshipItem as RelationshipItem,
        RubricId as RubricId,
        StrictListItem as StrictListItem,
        Text as Text,
        Tier as Tier,
        item_elements as item_elements,
        meta_rubric_json_schema as meta_rubric_json_schema,
    )
    from gamut_eval.rubric._superset import (
        RubricChange as RubricChange,
        diff_meta_rubrics as diff_meta_rubrics,
        diff_rubric_sets as diff_rubric_sets,
        restore_superset as restore_superset,
        superset_problems as superset_problems,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
