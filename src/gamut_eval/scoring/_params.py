"""Scoring parameters: one typed object, recorded with every score."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gamut_eval.rubric import Tier


def _default_weights() -> dict[Tier, float]:
    return {Tier.ANSWER_CRITICAL: 0.6, Tier.VALUABLE: 0.3, Tier.CONTEXT: 0.1}


class ScoringParams(BaseModel):
    """Lambda, mu and the global tier weights of the Gamut score (docs/method.md [S2], [S4])."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    lam: Annotated[float, Field(gt=0, lt=1)] = 0.5
    """Credit for ``partially_meets`` (0 < lambda < 1)."""
    mu: Annotated[float, Field(lt=0)] = -2.0
    """Score of ``contradicts`` (mu < 0); it also counts |mu| times in the denominator."""
    weights: dict[Tier, Annotated[float, Field(ge=0)]] = Field(default_factory=_default_weights)
    """Global tier weights; a tier with no scored check gives its weight to the others."""

    @field_validator("weights")
    @classmethod
    def _complete(cls, weights: dict[Tier, float]) -> dict[Tier, float]:
        missing = [t.value for t in Tier if t not in weights]
        if missing:
            raise ValueError(f"weights must give every tier; missing: {', '.join(missing)}")
        if sum(weights.values()) <= 0:
            raise ValueError("at least one tier weight must be positive")
        return weights
