"""Question diversity as report tables (the paper's Section 6).

The analysis itself lives in ``_diversity`` (``question_diversity``); the report reads its
result through ``model_dump`` into its own row models, so the report's JSON keys stay
documented and stable here, and the report does not break at import time when that
module is absent (it is imported lazily, see ``_report``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from gamut_eval.analysis._tables import Count, Rate, Row, Stat, TableSpec

__all__ = [
    "DIVERSITY_TABLES",
    "ClusterRow",
    "DiversitySummaryRow",
    "DiversityTables",
    "NearDuplicateRow",
    "TemplateRow",
    "diversity_rows",
]


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


@dataclass(frozen=True)
class DiversityTables:
    """The four diversity tables of a report (empty when diversity is not available)."""

    summary: list[DiversitySummaryRow] = field(default_factory=list)
    templates: list[TemplateRow] = field(default_factory=list)
    near_duplicates: list[NearDuplicateRow] = field(default_factory=list)
    clusters: list[ClusterRow] = field(default_factory=list)


R = TypeVar("R", bound=Row)


def _pick(row: type[R], data: dict[str, Any]) -> R:
    """The row's fields from ``data``; extra keys in the analysis' result are ignored."""
    return row.model_validate({name: data[name] for name in row.model_fields if name in data})


def diversity_rows(result: Any) -> DiversityTables:
    """The four tables from a ``DiversityReport`` (any object with ``model_dump``)."""
    data = result.model_dump(mode="json")
    return DiversityTables(
        summary=[_pick(DiversitySummaryRow, data)],
        templates=[_pick(TemplateRow, t) for t in data["templates"]],
        near_duplicates=[_pick(NearDuplicateRow, d) for d in data["near_duplicates"]],
        clusters=[_pick(ClusterRow, c) for c in data["clusters"]],
    )
