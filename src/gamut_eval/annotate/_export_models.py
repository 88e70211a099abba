"""The files ``gamut annotate export`` writes besides the dataset, as Pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["DecisionRow", "DroppedQuestion", "ExportManifest"]

_FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class DroppedQuestion(BaseModel):
    """A question left out of the dataset, and why."""

    model_config = _FROZEN

    id: str
    """The question (record) id."""
    reason: str | None
    """The reason the adjudicator or admin gave."""


class ExportManifest(BaseModel):
    """``NAME.manifest.json``: what one export contains."""

    model_config = _FROZEN

    dataset_version: int
    """This export's number (also in every record's ``metadata.annotation``)."""
    exported_at: str
    """When (ISO 8601, UTC)."""
    exporter: str
    """``gamut-eval`` and its version."""
    records: int
    """Questions in the dataset."""
    sha256: str
    """SHA-256 of the dataset file's bytes."""
    dropped: tuple[DroppedQuestion, ...]
    """Questions dropped during rubric revision."""
    images_needing_candidates: tuple[str, ...]
    """Image ids whose candidates were all discarded."""


class DecisionRow(BaseModel):
    """A final decision on a candidate, in the row format ``gamut build review --decisions``
    reads (``gamut_eval.construct.Decision``)."""

    model_config = _FROZEN

    candidate_id: str
    """The candidate question."""
    decision: Literal["accept", "revise", "discard"]
    """What people decided."""
    revised_question: str | None = None
    """The revised wording, for ``revise`` only (it re-enters the next round)."""
    annotator: str
    """Who decided: both reviewers when they agreed, else the adjudicator."""
    round: int
    """The review round the candidate was in."""
    decided_at: str
    """When the deciding review or ruling was saved (ISO 8601, UTC)."""
    comment: str | None = None
    """The deciders' comments."""
    metadata: dict[str, Any]
    """The image, its status, and the candidate's origin and every review and ruling."""
