"""score_response: tier scores and the Gamut score, expected values computed by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from gamut_eval import (
    Check,
    CheckKind,
    Checklist,
    ScoringParams,
    Tier,
    ValidationError,
    Verdict,
    score_response,
)
from gamut_eval.scoring import TierCounts, tier_score, verdict_value

AC, V, C = Tier.ANSWER_CRITICAL, Tier.VALUABLE, Tier.CONTEXT


def _checklist(tiers: dict[str, Tier]) -> Checklist:
    return Checklist(
        rubric_id="q",
        checks=tuple(
            Check(id=cid, kind=CheckKind.FACT, tier=tier, text=f"states {cid}", item=cid)
            for cid, tier in tiers.items()
        ),
    )


# Three AC checks, two V checks, two C checks.
CHECKLIST = _checklist({"a1": AC, "a2": AC, "a3": AC, "v1": V, "v2": V, "c1": C, "c2": C})


def _all(verdict: str | None) -> dict[str, str | None]:
    return {c.id: verdict for c in CHECKLIST.checks}


def test_all_meets_scores_one() -> None:
    card = score_response(CHECKLIST, _all("meets"))
    assert card.gamut == 1.0
    assert card.tiers == {AC: 1.0, V: 1.0, C: 1.0}


def test_all_contradicts_scores_minus_one() -> None:
    # T = mu*C / (|mu|*C) = -1 in every tier.
    card = score_response(CHECKLIST, _all("contradicts"))
    assert card.gamut == -1.0
    assert card.tiers == {AC: -1.0, V: -1.0, C: -1.0}


def test_all_missing_scores_zero() -> None:
    assert score_response(CHECKLIST, _all("missing")).gamut == 0.0


def test_all_partial_scores_lambda() -> None:
    assert score_response(CHECKLIST, _all("partially_meets")).gamut == pytest.approx(0.5)


def test_mixed_verdicts_by_hand() -> None:
    verdicts = {
        "a1": "meets",
        "a2": "partially_meets",
        "a3": "contradicts",
        "v1": "meets",
        "v2": "missing",
        "c1": "missing",
        "c2": "partially_meets",
    }
    card = score_response(CHECKLIST, verdicts)
    # AC: M=1 P=1 C=1 -> (1 + 0.5 - 2) / (1 + 1 + 2) = -0.125
    # V:  M=1 S=1     -> 1 / 2 = 0.5
    # C:  S=1 P=1     -> 0.5 / 2 = 0.25
    assert card.tiers[AC] == pytest.approx(-0.125)
    assert card.tiers[V] == pytest.approx(0.5)
    assert card.tiers[C] == pytest.approx(0.25)
    # 0.6 * -0.125 + 0.3 * 0.5 + 0.1 * 0.25 = -0.075 + 0.15 + 0.025 = 0.1
    assert card.gamut == pytest.approx(0.1)
    assert card.counts[AC] == TierCounts(meets=1, partially_meets=1, contradicts=1)
    assert card.counts[C] == TierCounts(missing=1, partially_meets=1)


def test_contradiction_costs_more_than_omission() -> None:
    cautious = score_response(CHECKLIST, {**_all("meets"), "a1": "missing"})
    wrong = score_response(CHECKLIST, {**_all("meets"), "a1": "contradicts"})
    # AC cautious: 2/3; AC wrong: (2 - 2) / (2 + 2) = 0.
    assert cautious.tiers[AC] == pytest.approx(2 / 3)
    assert wrong.tiers[AC] == 0.0
    assert cautious.gamut is not None
    assert wrong.gamut is not None
    assert cautious.gamut > wrong.gamut


def test_unscored_answer_critical_is_never_free() -> None:
    # The judge failed on all three AC checks; V and C are met. Renormalising over V and C
    # would give (0.3 * 1 + 0.1 * 1) / 0.4 = 1.0, a perfect score for an ungraded answer.
    verdicts = {**_all("meets"), "a1": None, "a2": None, "a3": None}
    card = score_response(CHECKLIST, verdicts)
    assert card.gamut is None
    assert card.unscored_tiers == (AC,)
    # The tiers that were graded still get their own scores, and the counts are reported.
    assert card.tiers == {V: 1.0, C: 1.0}
    assert card.counts[AC] == TierCounts(unscored=3)


def test_one_unscored_tier_voids_the_score_whichever_it_is() -> None:
    # AC = 1/3 (M=1, S=2), but V's two checks and C's two checks are all unscored.
    verdicts = {**_all(None), "a1": "meets", "a2": "missing", "a3": "missing"}
    card = score_response(CHECKLIST, verdicts)
    assert card.tiers == {AC: pytest.approx(1 / 3)}
    assert card.gamut is None
    assert card.unscored_tiers == (V, C)
    # Only context unscored: still no score.
    assert score_response(CHECKLIST, {**_all("meets"), "c1": None, "c2": None}).gamut is None


def test_one_scored_check_in_a_tier_is_enough() -> None:
    # AC: a1 meets, a2 and a3 unscored -> T_AC = 1/1 = 1.0; V: v1 missing, v2 unscored -> 0.
    # C all met -> 1.0. Gamut = 0.6 * 1 + 0.3 * 0 + 0.1 * 1 = 0.7 (weights sum to 1).
    verdicts = {**_all("meets"), "a2": None, "a3": None, "v1": "missing", "v2": None}
    card = score_response(CHECKLIST, verdicts)
    assert card.gamut == pytest.approx(0.7)
    assert card.unscored_tiers == ()


def test_a_tier_with_no_weight_does_not_void_the_score() -> None:
    params = ScoringParams(weights={AC: 0.5, V: 0.5, C: 0.0})
    verdicts = {**_all("meets"), "v1": "missing", "c1": None, "c2": None}
    # C weighs nothing, so its being ungraded changes nothing:
    # AC = 1.0, V = 1/2; (0.5 * 1 + 0.5 * 0.5) / (0.5 + 0.5) = 0.75.
    card = score_response(CHECKLIST, verdicts, params)
    assert card.gamut == pytest.approx(0.75)
    assert card.unscored_tiers == (C,)


def test_a_tier_without_checks_still_gives_its_weight_away() -> None:
    checklist = _checklist({"a1": AC, "v1": V})
    # No context checks at all: AC = 1, V = 0 -> (0.6 * 1 + 0.3 * 0) / (0.6 + 0.3) = 2/3.
    card = score_response(checklist, {"a1": "meets", "v1": "missing"})
    assert card.gamut == pytest.approx(0.6 / 0.9)
    assert C not in card.counts


def test_answer_critical_and_context_only_redistributes() -> None:
    checklist = _checklist({"a1": AC, "a2": AC, "c1": C})
    card = score_response(checklist, {"a1": "meets", "a2": "missing", "c1": "contradicts"})
    # AC = 0.5, C = -1; (0.6 * 0.5 + 0.1 * -1) / (0.6 + 0.1) = 0.2 / 0.7
    assert card.gamut == pytest.approx(0.2 / 0.7)
    assert set(card.tiers) == {AC, C}


def test_all_unscored_gives_none_not_zero() -> None:
    card = score_response(CHECKLIST, _all(None))
    assert card.gamut is None
    assert card.tiers == {}
    assert sum(c.unscored for c in card.counts.values()) == 7


def test_unscored_checks_are_left_out_of_the_tier() -> None:
    verdicts = {**_all("meets"), "a1": None, "a2": "contradicts"}
    # AC scored: a2 contradicts, a3 meets -> (1 - 2) / (1 + 2) = -1/3
    assert score_response(CHECKLIST, verdicts).tiers[AC] == pytest.approx(-1 / 3)


def test_custom_lambda_mu_and_weights() -> None:
    params = ScoringParams(lam=0.25, mu=-1.0, weights={AC: 0.5, V: 0.5, C: 0.0})
    verdicts = {
        "a1": "partially_meets",
        "a2": "contradicts",
        "a3": "meets",
        "v1": "partially_meets",
        "v2": "partially_meets",
        "c1": "meets",
        "c2": "meets",
    }
    card = score_response(CHECKLIST, verdicts, params)
    # AC: (1 + 0.25 - 1) / (1 + 1 + 1) = 0.25 / 3; V: 0.5 / 2 = 0.25; C weight 0.
    assert card.tiers[AC] == pytest.approx(0.25 / 3)
    assert card.tiers[V] == pytest.approx(0.25)
    assert card.gamut == pytest.approx((0.5 * 0.25 / 3 + 0.5 * 0.25) / 1.0)


def test_verdict_enum_and_strings_are_equivalent() -> None:
    as_enum = {c.id: Verdict.PARTIALLY_MEETS for c in CHECKLIST.checks}
    assert score_response(CHECKLIST, as_enum) == score_response(CHECKLIST, _all("partially_meets"))


def test_verdict_value_mapping_is_separate() -> None:
    params = ScoringParams(lam=0.3, mu=-3.0)
    assert [verdict_value(v, params) for v in Verdict] == [1.0, 0.3, 0.0, -3.0]


def test_unknown_missing_and_bad_verdicts_are_all_reported() -> None:
    verdicts: dict[str, str | None] = {**_all("meets"), "zz": "meets", "v1": "mostly meets"}
    del verdicts["c2"]
    with pytest.raises(ValidationError) as info:
        score_response(CHECKLIST, verdicts)
    rules = {(d.path, d.rule) for d in info.value.details}
    assert rules == {("zz", "known-check"), ("c2", "verdict-present"), ("v1", "verdict-value")}
    assert "mostly meets" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"lam": 0.0}, "lam"),
        ({"lam": 1.0}, "lam"),
        ({"mu": 0.0}, "mu"),
        ({"weights": {AC: 1.0}}, "weights"),
    ],
)
def test_params_are_validated(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ScoringParams(**kwargs)  # type: ignore[arg-type]


verdict_choice = st.sampled_from([*(v.value for v in Verdict), None])


@settings(max_examples=300, deadline=None)
@given(
    verdicts=st.lists(verdict_choice, min_size=7, max_size=7),
    lam=st.floats(0.01, 0.99),
    mu=st.floats(-10, -0.01),
)
def test_scores_stay_in_range(verdicts: list[str | None], lam: float, mu: float) -> None:
    params = ScoringParams(lam=lam, mu=mu)
    card = score_response(
        CHECKLIST, dict(zip([c.id for c in CHECKLIST.checks], verdicts, strict=True)), params
    )
    for value in card.tiers.values():
        assert -1.0 - 1e-12 <= value <= 1.0 + 1e-12
    if card.gamut is not None:
        assert -1.0 - 1e-12 <= card.gamut <= 1.0 + 1e-12
    by_tier: dict[Tier, list[str | None]] = {}
    for check, verdict in zip(CHECKLIST.checks, verdicts, strict=True):
        by_tier.setdefault(check.tier, []).append(verdict)
    void = any(all(v is None for v in tier) for tier in by_tier.values())
    assert (card.gamut is None) == void


def test_tier_score_of_no_scored_checks_is_none() -> None:
    assert tier_score(TierCounts(unscored=3), ScoringParams()) is None
