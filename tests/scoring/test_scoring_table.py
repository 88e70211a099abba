"""score_table: the vectorised path gives exactly score_response's numbers."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from gamut_eval import (
    Check,
    CheckKind,
    Checklist,
    ScoringParams,
    Tier,
    ValidationError,
    score_response,
    score_table,
)
from gamut_eval.scoring import COUNT_COLUMNS, summarise_scores

AC, V, C = Tier.ANSWER_CRITICAL, Tier.VALUABLE, Tier.CONTEXT
VERDICTS = ["meets", "partially_meets", "missing", "contradicts", None]


def _checklist(qid: str, tiers: list[Tier]) -> Checklist:
    return Checklist(
        rubric_id=qid,
        checks=tuple(
            Check(id=f"c{i}", kind=CheckKind.FACT, tier=t, text=f"fact {i}", item=f"c{i}")
            for i, t in enumerate(tiers)
        ),
    )


CHECKLISTS = {
    "q1": _checklist("q1", [AC, AC, V, C, C]),
    "q2": _checklist("q2", [AC, V, V]),
    "q3": _checklist("q3", [C, C]),
}


def _rows(
    seed: int, models: int = 4, judges: int = 2, choices: list[str | None] = VERDICTS
) -> tuple[pd.DataFrame, list[tuple[tuple[str, ...], dict[str, str | None]]]]:
    rng = random.Random(seed)
    rows = []
    responses = []
    for qid, checklist in CHECKLISTS.items():
        for m in range(models):
            for j in range(judges):
                verdicts = {c.id: rng.choice(choices) for c in checklist.checks}
                key = (qid, f"m{m}", "multimodal", f"j{j}")
                responses.append((key, verdicts))
                rows += [
                    dict(
                        zip(("question_id", "model", "setting", "judge"), key, strict=True),
                        check_id=cid,
                        verdict=v,
                    )
                    for cid, v in verdicts.items()
                ]
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed), responses


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    lam=st.floats(0.05, 0.95),
    mu=st.floats(-5, -0.1),
    unscored_heavy=st.booleans(),
    context_weight=st.sampled_from([0.0, 0.1]),
)
def test_vectorised_equals_scalar_exactly(
    seed: int, lam: float, mu: float, unscored_heavy: bool, context_weight: float
) -> None:
    # Half the draws make most verdicts unscored, so whole tiers go unscored (no score)
    # often; a zero context weight exercises the rule that such a tier voids nothing.
    weights = {AC: 0.6, V: 0.3, C: context_weight}
    params = ScoringParams(lam=lam, mu=mu, weights=weights)
    choices: list[str | None] = ["meets", "contradicts", None, None, None]
    frame, responses = _rows(seed, choices=choices if unscored_heavy else VERDICTS)
    table = score_table(frame, CHECKLISTS, params).set_index(
        ["question_id", "model", "setting", "judge"]
    )
    assert len(table) == len(responses)
    for key, verdicts in responses:
        card = score_response(CHECKLISTS[key[0]], verdicts, params)
        row = table.loc[key]
        if card.gamut is None:
            assert math.isnan(row["gamut"])
        else:
            assert row["gamut"] == card.gamut  # bit-identical, not approximately
        for tier in Tier:
            if tier in card.tiers:
                assert row[tier.value] == card.tiers[tier]
            else:
                assert math.isnan(row[tier.value])
            counts = card.counts.get(tier)
            for verdict in ("meets", "partially_meets", "missing", "contradicts", "unscored"):
                expected = getattr(counts, verdict) if counts else 0
                assert row[f"{tier.value}.{verdict}"] == expected


def test_tier_column_is_used_when_present() -> None:
    frame = pd.DataFrame(
        [
            {
                "question_id": "x",
                "model": "m",
                "check_id": "a",
                "tier": "answer_critical",
                "verdict": "meets",
            },
            {
                "question_id": "x",
                "model": "m",
                "check_id": "b",
                "tier": "context",
                "verdict": "contradicts",
            },
        ]
    )
    table = score_table(frame)
    # AC = 1, C = -1; (0.6 - 0.1) / 0.7
    assert table.loc[0, "gamut"] == pytest.approx(0.5 / 0.7)
    assert list(table.columns[:2]) == ["question_id", "model"]
    assert set(COUNT_COLUMNS) <= set(table.columns)


def test_summary_means_over_questions_and_counts_unscored_responses() -> None:
    frame = pd.DataFrame(
        [
            {"question_id": "q1", "model": "m", "check_id": "c0", "verdict": "meets"},
            {"question_id": "q1", "model": "m", "check_id": "c1", "verdict": "meets"},
            {"question_id": "q1", "model": "m", "check_id": "c2", "verdict": None},
            {"question_id": "q1", "model": "m", "check_id": "c3", "verdict": "missing"},
            {"question_id": "q1", "model": "m", "check_id": "c4", "verdict": None},
            {"question_id": "q3", "model": "m", "check_id": "c0", "verdict": "missing"},
            {"question_id": "q3", "model": "m", "check_id": "c1", "verdict": "meets"},
            {"question_id": "q2", "model": "m", "check_id": "c0", "verdict": None},
            {"question_id": "q2", "model": "m", "check_id": "c1", "verdict": "meets"},
            {"question_id": "q2", "model": "m", "check_id": "c2", "verdict": "meets"},
        ]
    )
    summary = summarise_scores(score_table(frame, CHECKLISTS))
    row = summary.iloc[0]
    # q1 [AC AC V C C]: V's only check unscored -> no score.
    # q3 [C C]: C = 1/2 and the only tier with checks -> 0.5.
    # q2 [AC V V]: AC's only check unscored -> no score, although V is fully met.
    assert (row["responses"], row["scored"], row["unscored"]) == (3, 1, 2)
    assert row["gamut"] == pytest.approx(0.5)
    # Unscored checks: q1 two, q2 one, of 5 + 2 + 3 = 10.
    assert row["unscored_rate"] == pytest.approx(3 / 10)


def test_all_unscored_answer_critical_gives_nan_in_the_table_too() -> None:
    # q2 [AC V V]: today's renormalisation would give (0.3 * 1) / 0.3 = 1.0.
    frame = pd.DataFrame(
        [
            {"question_id": "q2", "model": "m", "check_id": "c0", "verdict": None},
            {"question_id": "q2", "model": "m", "check_id": "c1", "verdict": "meets"},
            {"question_id": "q2", "model": "m", "check_id": "c2", "verdict": "meets"},
        ]
    )
    table = score_table(frame, CHECKLISTS)
    assert math.isnan(table.loc[0, "gamut"])
    assert table.loc[0, "valuable"] == 1.0
    assert table.loc[0, "answer_critical.unscored"] == 1


def _table_row(qid: str, model: str, verdicts: list[str | None]) -> list[dict[str, object]]:
    return [
        {"question_id": qid, "model": model, "check_id": f"c{i}", "verdict": v}
        for i, v in enumerate(verdicts)
    ]


def test_summary_names_the_questions_a_model_misses_against_its_peers() -> None:
    # Model a is scored on q1, q2 and q3; model b's q2 has an all-unscored AC tier.
    frame = pd.DataFrame(
        _table_row("q1", "a", ["meets"] * 5)
        + _table_row("q2", "a", ["meets"] * 3)
        + _table_row("q3", "a", ["meets"] * 2)
        + _table_row("q1", "b", ["missing"] * 5)
        + _table_row("q2", "b", [None, "meets", "meets"])
        + _table_row("q3", "b", ["missing"] * 2)
    )
    summary = summarise_scores(score_table(frame, CHECKLISTS)).set_index("model")
    # a: mean of 1, 1, 1 = 1 over three questions; b: mean of 0, 0 over two.
    assert summary.loc["a", "gamut"] == 1.0
    assert summary.loc["b", "gamut"] == 0.0
    assert summary.loc["a", ["scored", "unscored", "missing_questions"]].tolist() == [3, 0, 0]
    assert summary.loc["b", ["scored", "unscored", "missing_questions"]].tolist() == [2, 1, 1]


def test_missing_verdict_rows_are_errors_naming_count_and_first_ones() -> None:
    frame = pd.DataFrame(
        _table_row("q1", "a", ["meets", "meets"])  # c2, c3, c4 of q1 missing
        + _table_row("q2", "a", ["meets"] * 3)
        + _table_row("q3", "a", ["meets"])  # c1 of q3 missing
    )
    with pytest.raises(ValidationError) as info:
        score_table(frame, CHECKLISTS)
    text = str(info.value)
    assert "4 check(s) have no verdict row, in 2 response(s)" in text
    listed = [d.value for d in info.value.details[1:]]
    assert listed == ["c2", "c3", "c4", "c1"]
    assert "question_id 'q1', model 'a'" in text
    # A sample of checks (gold labels) is scored when asked for explicitly:
    # q1: AC 1.0 only -> 1.0; q3: C 1.0 -> 1.0.
    table = score_table(frame, CHECKLISTS, require_all_checks=False)
    assert table["gamut"].tolist() == [1.0, 1.0, 1.0]


def test_unknown_questions_and_checks_are_all_counted() -> None:
    frame = pd.DataFrame(
        _table_row("q9", "a", ["meets"])
        + _table_row("q8", "a", ["meets"])
        + [{"question_id": "q2", "model": "a", "check_id": "zz", "verdict": "meets"}]
    )
    with pytest.raises(ValidationError) as info:
        score_table(frame, CHECKLISTS)
    rules = [d.rule for d in info.value.details]
    assert rules == ["known-question", "known-check", "known-check"]
    assert info.value.details[0].value == ["q9", "q8"]
    assert "2 question id(s)" in str(info.value)
    assert info.value.details[2].value == "zz"


def test_unknown_check_and_question_and_verdict_are_errors() -> None:
    base = {"question_id": "q2", "model": "m"}
    with pytest.raises(ValidationError, match="known-check"):
        score_table(pd.DataFrame([{**base, "check_id": "nope", "verdict": "meets"}]), CHECKLISTS)
    with pytest.raises(ValidationError, match="known-question"):
        score_table(
            pd.DataFrame([{**base, "question_id": "q9", "check_id": "c0", "verdict": "meets"}]),
            CHECKLISTS,
        )
    with pytest.raises(ValidationError, match="verdict-value"):
        score_table(pd.DataFrame([{**base, "check_id": "c0", "verdict": "mostly"}]), CHECKLISTS)


def test_duplicate_verdict_rows_are_refused() -> None:
    row = {"question_id": "q2", "model": "m", "check_id": "c0", "verdict": "meets"}
    with pytest.raises(ValidationError, match="unique-verdict"):
        score_table(pd.DataFrame([row, row]), CHECKLISTS)
