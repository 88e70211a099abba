"""Verdicts, tier scores and the Gamut score (docs/method.md [S1]-[S9]). Pure: no I/O, no network.

The table functions need pandas and numpy; they are imported on first use, so importing
this package (and the CLI that only shows ``--help``) stays cheap.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any

from gamut_eval.scoring._score import (
    ScoreCard,
    ScoringParams,
    TierCounts,
    gamut_score,
    score_response,
    tier_score,
)
from gamut_eval.scoring._verdict import Verdict, parse_verdict, verdict_value

if _TYPE_CHECKING:
    from gamut_eval.scoring._table import (
        COUNT_COLUMNS,
        RESPONSE_KEYS,
        score_table,
        summarise_scores,
    )

_TABLE_NAMES = ("COUNT_COLUMNS", "RESPONSE_KEYS", "score_table", "summarise_scores")


def __getattr__(name: str) -> _Any:
    if name in _TABLE_NAMES:
        from gamut_eval.scoring import _table

        value = getattr(_table, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COUNT_COLUMNS",
    "RESPONSE_KEYS",
    "ScoreCard",
    "ScoringParams",
    "TierCounts",
    "Verdict",
    "gamut_score",
    "parse_verdict",
    "score_response",
    "score_table",
    "summarise_scores",
    "tier_score",
    "verdict_value",
]
