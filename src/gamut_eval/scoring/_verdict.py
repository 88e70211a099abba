"""The closed verdict vocabulary and its swappable mapping to numbers."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gamut_eval.scoring._score import ScoringParams


class Verdict(StrEnum):
    """How a response fares against one check."""

    MEETS = "meets"
    """States the required content."""
    PARTIALLY_MEETS = "partially_meets"
    """Directionally right but imprecise (the right genus, not the species)."""
    MISSING = "missing"
    """Absent, too vague, or hedged."""
    CONTRADICTS = "contradicts"
    """States something incompatible with the check (a wrong identity, date or order)."""

    @property
    def words(self) -> str:
        """The verdict in words, for people (``partially meets``)."""
        return self.value.replace("_", " ")


VerdictName = Literal[Verdict.MEETS, Verdict.PARTIALLY_MEETS, Verdict.MISSING, Verdict.CONTRADICTS]
"""The four verdicts (written in files as their values: ``meets``...)."""


def parse_verdict(value: Verdict | str | None) -> Verdict | None:
    """A ``Verdict`` from itself, its string value, or ``None`` (unscored).

    Raises ``ValueError`` naming the allowed values for anything else.
    """
    if value is None or isinstance(value, Verdict):
        return value
    try:
        return Verdict(value)
    except ValueError:
        allowed = ", ".join(v.value for v in Verdict)
        raise ValueError(f"unknown verdict {value!r}; expected one of {allowed} or null") from None


def verdict_value(verdict: Verdict, params: ScoringParams) -> float:
    """The number a verdict scores: meets 1, partially meets lambda, missing 0, contradicts mu."""
    return {
        Verdict.MEETS: 1.0,
        Verdict.PARTIALLY_MEETS: params.lam,
        Verdict.MISSING: 0.0,
        Verdict.CONTRADICTS: params.mu,
    }[verdict]
