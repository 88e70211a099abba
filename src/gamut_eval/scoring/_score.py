"""Scoring one response: tier scores and the Gamut score (docs/method.md [S3], [S4]), and
the scoring parameters (one typed object, recorded with every score). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import TIERS, Checklist, Tier
from gamut_eval.scoring._verdict import Verdict, parse_verdict


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


class TierCounts(BaseModel):
    """How many checks of one tier got each verdict; ``unscored`` ones count in no score."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    meets: int = 0
    """M: checks met."""
    partially_meets: int = 0
    """P: checks partially met."""
    missing: int = 0
    """S: checks missing."""
    contradicts: int = 0
    """C: checks contradicted."""
    unscored: int = 0
    """Checks the judge could not grade; excluded from every score."""

    @property
    def scored(self) -> int:
        return self.meets + self.partially_meets + self.missing + self.contradicts


class ScoreCard(BaseModel):
    """The score of one response against one checklist."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    gamut: float | None
    """Weighted mean of tier scores, in [-1, 1]; ``None`` (the response is unscored) when a
    tier that has checks, and a positive weight, has none of them scored."""
    tiers: dict[Tier, float]
    """Tier score per tier that has at least one scored check."""
    counts: dict[Tier, TierCounts]
    """Verdict counts per tier (every tier of the checklist), unscored included."""

    @property
    def unscored_tiers(self) -> tuple[Tier, ...]:
        """Tiers that have checks but none scored (any of them with weight voids ``gamut``)."""
        return tuple(tier for tier, counts in self.counts.items() if counts.scored == 0)


def tier_score(counts: TierCounts, params: ScoringParams) -> float | None:
    """T = (M + lam P + mu C) / (M + P + S + |mu| C); ``None`` with no scored check."""
    m, p, s, c = counts.meets, counts.partially_meets, counts.missing, counts.contradicts
    denominator = m + p + s + abs(params.mu) * c
    if denominator == 0:
        return None
    return (m + params.lam * p + params.mu * c) / denominator


def gamut_score(tiers: Mapping[Tier, float], params: ScoringParams) -> float | None:
    """Weighted mean of the tier scores given; other tiers' weight is redistributed.

    Only tiers without checks may be left out: ``score_response`` gives no score at all
    when a tier has checks but none of them was scored (unscored is never free).
    """
    numerator = 0.0
    total = 0.0
    for tier in TIERS:
        if tier in tiers:
            numerator += params.weights[tier] * tiers[tier]
            total += params.weights[tier]
    if total == 0:
        return None
    return numerator / total


def _verdict_errors(checklist: Checklist, verdicts: Mapping[str, object]) -> list[ErrorDetail]:
    known = checklist.by_id()
    errors = [
        ErrorDetail(check_id, "known-check", "no check with this id in the checklist", check_id)
        for check_id in verdicts
        if check_id not in known
    ]
    errors += [
        ErrorDetail(check_id, "verdict-present", "no verdict given (use null for unscored)")
        for check_id in known
        if check_id not in verdicts
    ]
    for check_id, value in verdicts.items():
        try:
            parse_verdict(value)  # type: ignore[arg-type]
        except ValueError as exc:
            errors.append(ErrorDetail(check_id, "verdict-value", str(exc), value))
    return errors


def score_response(
    checklist: Checklist,
    verdicts: Mapping[str, Verdict | str | None],
    params: ScoringParams | None = None,
) -> ScoreCard:
    """Score one response from its verdicts (check id -> verdict, its string, or ``None``).

    Every check of the checklist needs an entry; unknown ids and unknown verdict strings are
    errors. ``None`` means the judge could not grade that check: it is reported, not scored.
    When every check of a tier is ``None`` (and the tier's weight is positive) the response
    gets no Gamut score (``gamut`` is ``None``): renormalising over the other tiers would
    score it as if the missing tier did not exist. A tier without checks in the checklist
    still gives its weight to the others.
    """
    params = params or ScoringParams()
    errors = _verdict_errors(checklist, verdicts)
    if errors:
        raise ValidationError(errors)
    tallies: dict[Tier, dict[str, int]] = {}
    for check in checklist.checks:
        verdict = parse_verdict(verdicts[check.id])
        key = "unscored" if verdict is None else verdict.value
        bucket = tallies.setdefault(check.tier, {})
        bucket[key] = bucket.get(key, 0) + 1
    counts = {tier: TierCounts(**tallies[tier]) for tier in TIERS if tier in tallies}
    tiers = {t: v for t, c in counts.items() if (v := tier_score(c, params)) is not None}
    void = any(params.weights[t] > 0 and c.scored == 0 for t, c in counts.items())
    gamut = None if void else gamut_score(tiers, params)
    return ScoreCard(gamut=gamut, tiers=tiers, counts=counts)
