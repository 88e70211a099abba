"""The leaderboard (the paper's Table 1) and its breakdowns by domain and popularity.

A model's score is the mean of its per-response Gamut scores over questions, with a 95%
bootstrap interval over questions. Beside it: tier scores, how its scored checks split
over the four verdicts, and the unscored rate. The contradiction and omission rates are
given separately, with intervals, because they tell apart two models the score can place
together: a confident-but-wrong one (contradicts) and a cautious one (missing).

Models are meant to be compared on the same questions. Each row says how many responses
were averaged and how many have no score, and a row is flagged (``paired`` false) when
another model of the same setting and judge is scored on a question it is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from gamut_eval.analysis._rundata import VERDICT_COLUMNS, ScoreCube
from gamut_eval.analysis._stats import Bootstrap, Means, nanmean, ranks
from gamut_eval.analysis._tables import Count, Rate, Row, Score, number
from gamut_eval.scoring import Verdict

FloatArray = npt.NDArray[np.float64]

POPULARITY_ORDER: tuple[str, ...] = ("head", "torso", "tail")


class LeaderboardRow(Row):
    """One model in one setting, graded by one judge."""

    setting: str
    """``multimodal`` or ``text_only`` (or the run's own setting names)."""
    judge: str
    """Judge model id."""
    model: str
    """Model id (untrusted text: it comes from the run's files)."""
    rank: int
    """1 for the best Gamut score in this setting and judge; ties share a rank."""
    responses: Count
    """Responses the run has for this model."""
    scored: Count
    """Responses with a Gamut score: the ones averaged (only these count in the means)."""
    unscored: Count
    """Responses without a Gamut score: a weighted tier had checks but none was graded."""
    missing_questions: Count
    """Questions another model of this setting and judge is scored on and this one is not."""
    paired: bool
    """Whether this row is scored on every question any model of its setting and judge is
    scored on (``missing_questions`` is 0). When not, its mean is over other questions
    than its neighbours' and comparing the two is not like for like."""
    gamut: Score
    """Mean Gamut score over questions (raw scale [-1, 1]; reports show it x100)."""
    gamut_low: Score
    """Lower end of the bootstrap interval of ``gamut`` (resampling questions)."""
    gamut_high: Score
    """Upper end of that interval."""
    answer_critical: Score
    """Mean Answer-Critical tier score over the responses that have that tier."""
    valuable: Score
    """Mean Valuable tier score."""
    context: Score
    """Mean Context tier score."""
    share_meets: Rate
    """Share of scored checks judged ``meets`` (per response, then averaged over questions
    like the score; the four shares sum to 1)."""
    share_partially_meets: Rate
    """Share judged ``partially_meets``."""
    omission_rate: Rate
    """Share judged ``missing``: the content is absent, too vague or hedged."""
    omission_rate_low: Rate
    """Lower end of the bootstrap interval of ``omission_rate``."""
    omission_rate_high: Rate
    """Upper end of that interval."""
    contradiction_rate: Rate
    """Share judged ``contradicts``: the response states something incompatible."""
    contradiction_rate_low: Rate
    """Lower end of the bootstrap interval of ``contradiction_rate``."""
    contradiction_rate_high: Rate
    """Upper end of that interval."""
    unscored_rate: Rate
    """Share of all checks the judge could not grade (left out of every number above)."""


class BreakdownRow(Row):
    """One model's score on the questions of one domain or popularity band."""

    dimension: str
    """``domain`` or ``popularity``."""
    group: str
    """The domain (e.g. ``food``) or band (``head``, ``torso``, ``tail``)."""
    setting: str
    """Setting."""
    judge: str
    """Judge model id."""
    model: str
    """Model id."""
    questions: Count
    """Questions in the group that this model has a score for."""
    gamut: Score
    """Mean Gamut score over those questions."""
    gamut_low: Score
    """Lower end of the bootstrap interval (the group's questions resampled on their own)."""
    gamut_high: Score
    """Upper end of that interval."""


def verdict_shares(cube: ScoreCube) -> FloatArray:
    """``(S, J, M, Q, 4)``: each response's share of scored checks per verdict (NaN for a
    response without a scored check)."""
    scored = cube.counts[..., :4].astype(np.float64)
    total = scored.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(total > 0, scored / np.where(total > 0, total, 1), np.nan))


def leaderboard_rows(cube: ScoreCube, means: Means, boot: Bootstrap) -> list[LeaderboardRow]:
    """Every (setting, judge, model), best first within each (setting, judge).

    ``means`` are the Gamut means of ``cube`` under ``boot`` (computed once per report
    and shared with the other analyses)."""
    low, high = boot.interval(means.boot)
    shares = verdict_shares(cube)
    missing = boot.means(shares[..., VERDICT_COLUMNS.index(Verdict.MISSING)])
    contra = boot.means(shares[..., VERDICT_COLUMNS.index(Verdict.CONTRADICTS)])
    missing_ci, contra_ci = boot.interval(missing.boot), boot.interval(contra.boot)
    share_means = nanmean(np.moveaxis(shares, -1, 0))
    tier_means = nanmean(np.moveaxis(cube.tiers, -1, 0))
    totals = cube.counts.sum(axis=-2)
    scored = ~np.isnan(cube.gamut)
    peers = scored.any(axis=2, keepdims=True)  # scored for some model of the setting, judge
    missing_questions = (peers & ~scored).sum(axis=-1)
    rows = []
    for s, setting in enumerate(cube.settings):
        for j, judge in enumerate(cube.judges):
            rank = ranks(means.point[s, j])
            for m in np.argsort(rank, kind="stable"):
                if not cube.present[s, j, m].any():
                    continue
                cell = (s, j, m)
                all_checks = totals[cell].sum()
                rows.append(
                    LeaderboardRow(
                        setting=setting,
                        judge=judge,
                        model=cube.models[m],
                        rank=int(rank[m]),
                        responses=int(cube.present[cell].sum()),
                        scored=int(scored[cell].sum()),
                        unscored=int((cube.present[cell] & ~scored[cell]).sum()),
                        missing_questions=int(missing_questions[cell]),
                        paired=bool(missing_questions[cell] == 0),
                        gamut=number(means.point[cell]),
                        gamut_low=number(low[cell]),
                        gamut_high=number(high[cell]),
                        answer_critical=number(tier_means[(0, *cell)]),
                        valuable=number(tier_means[(1, *cell)]),
                        context=number(tier_means[(2, *cell)]),
                        share_meets=number(share_means[(0, *cell)]),
                        share_partially_meets=number(share_means[(1, *cell)]),
                        omission_rate=number(missing.point[cell]),
                        omission_rate_low=number(missing_ci[0][cell]),
                        omission_rate_high=number(missing_ci[1][cell]),
                        contradiction_rate=number(contra.point[cell]),
                        contradiction_rate_low=number(contra_ci[0][cell]),
                        contradiction_rate_high=number(contra_ci[1][cell]),
                        unscored_rate=number(totals[cell][-1] / all_checks) if all_checks else None,
                    )
                )
    return rows


def _group_order(dimension: str, values: Sequence[str | None]) -> list[str]:
    present = {v for v in values if v}
    if dimension == "popularity":
        return [p for p in POPULARITY_ORDER if p in present] + sorted(
            present - set(POPULARITY_ORDER)
        )
    return sorted(present)


def breakdown_rows(
    cube: ScoreCube, groups: Mapping[str, Sequence[str | None]], boot: Bootstrap
) -> list[BreakdownRow]:
    """Scores per group of questions: ``groups`` maps a dimension (``domain``,
    ``popularity``) to each question's value, in ``cube.questions`` order (None: not
    known; such questions are in no group). Each group is resampled on its own."""
    rows = []
    for d, (dimension, values) in enumerate(groups.items()):
        labels = np.array([v or "" for v in values], dtype=object)
        for g, group in enumerate(_group_order(dimension, values)):
            mask = labels == group
            sub = boot.subset(mask, key=1000 * (d + 1) + g)
            gamut = cube.gamut[..., mask]
            means = sub.means(gamut)
            low, high = sub.interval(means.boot)
            scored = (~np.isnan(gamut)).sum(axis=-1)
            for (s, j, m), value in np.ndenumerate(means.point):
                if not scored[s, j, m]:
                    continue
                rows.append(
                    BreakdownRow(
                        dimension=dimension,
                        group=group,
                        setting=cube.settings[s],
                        judge=cube.judges[j],
                        model=cube.models[m],
                        questions=int(scored[s, j, m]),
                        gamut=number(value),
                        gamut_low=number(low[s, j, m]),
                        gamut_high=number(high[s, j, m]),
                    )
                )
    return rows
