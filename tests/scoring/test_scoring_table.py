"""score_table: the vectorised path gives exactly score_response's numbers."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    seed: int, models: int = 4, judges: int = 2
) -> tuple[pd.DataFrame, list[tuple[tuple[str, ...], dict[str, str | None]]]]:
    rng = random.Random(seed)
    rows = []
    responses = []
    for qid, checklist in CHECKLISTS.items():
        for m in range(models):
            for j in range(judges):
                verdicts = {c.id: rng.choice(VERDICTS) for c in checklist.checks}
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
@given(seed=st.integers(0, 10_000), lam=st.floats(0.05, 0.95), mu=st.floats(-5, -0.1))
def test_vectorised_equals_scalar_exactly(seed: int, lam: float, mu: float) -> None:
    params = ScoringParams(lam=lam, mu=mu)
    frame, responses = _rows(seed)
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


def test_summary_means_over_questions_and_ignores_all_unscored() -> None:
    frame = pd.DataFrame(
        [
            {"question_id": "q1", "model": "m", "check_id": "c0", "verdict": "meets"},
            {"question_id": "q1", "model": "m", "check_id": "c1", "verdict": "meets"},
            {"question_id": "q1", "model": "m", "check_id": "c2", "verdict": None},
            {"question_id": "q1", "model": "m", "check_id": "c3", "verdict": None},
            {"question_id": "q1", "model": "m", "check_id": "c4", "verdict": None},
            {"question_id": "q3", "model": "m", "check_id": "c0", "verdict": "missing"},
            {"question_id": "q3", "model": "m", "check_id": "c1", "verdict": "meets"},
            {"question_id": "q2", "model": "m", "check_id": "c0", "verdict": None},
            {"question_id": "q2", "model": "m", "check_id": "c1", "verdict": None},
            {"question_id": "q2", "model": "m", "check_id": "c2", "verdict": None},
        ]
    )
    summary = summarise_scores(score_table(frame, CHECKLISTS))
    row = summary.iloc[0]
    # q1: only AC scored, 1.0; q3: only C scored, 0.5; q2: nothing scored (left out).
    assert row["responses"] == 3
    assert row["scored"] == 2
    assert row["gamut"] == pytest.approx(0.75)
    assert row["unscored_rate"] == pytest.approx(6 / 10)


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
