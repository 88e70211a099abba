"""Verdicts, tier scores and the Gamut score (docs/method.md [S1]-[S9]). Pure: no I/O, no network.

The table functions need pandas and numpy; they are imported on first use, so importing
this package (and the CLI that only shows ``--help``) stays cheap.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.scoring._score import (
        ScoreCard as ScoreCard,
        ScoringParams as ScoringParams,
        TierCounts as TierCounts,
        gamut_score as gamut_score,
        score_response as score_response,
        tier_score as tier_score,
    )
    from gamut_eval.scoring._table import (
        COUNT_COLUMNS as COUNT_COLUMNS,
        RESPONSE_KEYS as RESPONSE_KEYS,
        score_table as score_table,
        summarise_scores as summarise_scores,
    )
    from gamut_eval.scoring._verdict import (
        Verdict as Verdict,
        VerdictName as VerdictName,
        parse_verdict as parse_verdict,
        verdict_value as verdict_value,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
