"""The verdict row: what ``gamut judge`` writes and ``gamut score`` reads, one per
(answer, check, judge)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Status", "VerdictName", "VerdictRow"]

VerdictName = Literal["meets", "partially_meets", "missing", "contradicts"]
"""The four verdicts as they are written in files."""
Status = Literal["ok", "unscored"]


class VerdictRow(BaseModel):
    """One judge's verdict on one check of one answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    question_id: str
    """Id of the dataset record."""
    model: str
    """The model that gave the answer."""
    setting: Literal["multimodal", "text_only"]
    """The setting the answer was given in."""
    judge: str
    """The judge model, as named on the command line."""
    check_id: str
    """Id of the check in the question's checklist (``core/item-1``...)."""
    verdict: VerdictName | None
    """The verdict; ``null`` when the check is unscored (the judge could not grade it)."""
    status: Status
    """``ok`` with a verdict, ``unscored`` without."""
    reason: str | None
    """Why the check is unscored (``null`` when it has a verdict)."""
    explanation: str
    """The judge's own words for its verdict."""
    attempts: int
    """Judge calls made for this check (first ask and re-asks); 0 if it was never judged."""
