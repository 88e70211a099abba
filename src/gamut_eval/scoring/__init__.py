"""Verdicts, tier scores and the Gamut score (docs/method.md [S1]-[S9]). Pure: no I/O or network."""

from gamut_eval.scoring._params import ScoringParams
from gamut_eval.scoring._score import ScoreCard, TierCounts, gamut_score, score_response, tier_score
from gamut_eval.scoring._table import COUNT_COLUMNS, RESPONSE_KEYS, score_table, summarise_scores
from gamut_eval.scoring._verdict import Verdict, parse_verdict, verdict_value

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
