"""Rankings of the models: the leaderboard (the paper's Table 1) and its breakdowns by domain
and popularity; whether the ranking holds across judges (Table 2, with each judge's
self-preference for its own model family) and without the image (Table 3, modality).

**Leaderboard.** A model's score is the mean of its per-response Gamut scores over
questions, with a 95% bootstrap interval over questions. Beside it: tier scores, how its
scored checks split over the four verdicts, and the unscored rate. The contradiction and
omission rates are given separately, with intervals, because they tell apart two models the
score can place together: a confident-but-wrong one (contradicts) and a cautious one
(missing).

Models are meant to be compared on the same questions. Each row says how many responses
were averaged and how many have no score, and a row is flagged (``paired`` false) when
another model of the same setting and judge is scored on a question it is not.

**Model families.** By default a model's family is the provider part of its id
(``openai/gpt-4.1`` -> ``openai``), following Inspect AI's naming. For ids routed through a
gateway or a serving engine the provider says nothing about who trained the model, so the
next part is used when there is one: ``vllm/Qwen/Qwen3-VL-235B`` -> ``qwen``,
``openrouter/anthropic/claude-opus`` -> ``anthropic``. Families compare case-insensitively.
A YAML (or JSON) file overrides this: a mapping from a model id, or a glob pattern over
ids, to a family. Exact ids win over patterns; patterns apply in file order::

    google/gemini-3.1-pro: google
    "vllm/Qwen/*": qwen
    "openai-api/deepseek/*": deepseek

**Self-preference**: does a judge favour answers of its own model family? For a judge of
family f, each model's offset is the judge's score minus the mean score the judges of
*other* families give it (a judge of the same family could share the bias). Averaged over
family-f models that is ``own_offset``; over the other models, ``other_offset``, which is
the judge's general leniency. Their difference is what it gives its own family beyond
that. The reference judges' scores include any bias they have for their own families, so
with three judges one judge's inflation d moves the others' values by a fraction of d:
read the rows together (docs/report.md works an example).

**Judge robustness**: the same responses scored by several judges. Does the ranking depend
on the judge? For every pair of judges: Kendall's tau-b between their rankings (with a
bootstrap interval), the pairs of models they order differently (and whether those are
neighbours), and the per-model score gaps. For every judge: its mean leniency offset (how
much higher it scores than the other judges) and its self-preference.

**Modality**: text-only minus multimodal, per model and judge. The text-only setting names
the entity in the question, so a model's gain without the image isolates what visual
identification costs it. The paper's reading rests on three numbers, each computed here
with a bootstrap interval: the per-model gap, whether the ranking survives removing the
image (Kendall's tau-b between the two settings, with the pairs that swap), and how
constant the gap is (its spread across models, and its correlation with the multimodal
score: near zero means a constant tax, negative means weak models gain most).

Every statistic is a function of the model means, so its interval comes from applying the
same function to the means under each bootstrap resample (shared across judges and
settings, so the comparisons are paired by question).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gamut_eval._files import read_mapping
from gamut_eval.analysis._rundata import VERDICT_COLUMNS, ScoreCube
from gamut_eval.analysis._stats import (
    Bootstrap,
    Means,
    kendall_tau_b,
    nanmean,
    pearson,
    ranks,
    swapped_pairs,
)
from gamut_eval.analysis._tables import Count, Rate, Row, Score, Stat, estimate, number
from gamut_eval.errors import ErrorDetail, ValidationError
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
    # (S, J, M, 2): each cell's interval, low then high
    missing_ci, contra_ci = (np.stack(boot.interval(r.boot), axis=-1) for r in (missing, contra))
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
                        **estimate("gamut", means.point[cell], low[cell], high[cell]),
                        answer_critical=number(tier_means[(0, *cell)]),
                        valuable=number(tier_means[(1, *cell)]),
                        context=number(tier_means[(2, *cell)]),
                        share_meets=number(share_means[(0, *cell)]),
                        share_partially_meets=number(share_means[(1, *cell)]),
                        **estimate("omission_rate", missing.point[cell], *missing_ci[cell]),
                        **estimate("contradiction_rate", contra.point[cell], *contra_ci[cell]),
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
                        **estimate("gamut", value, low[s, j, m], high[s, j, m]),
                    )
                )
    return rows


GATEWAYS: frozenset[str] = frozenset(
    {
        "openai-api",
        "openrouter",
        "vllm",
        "sglang",
        "ollama",
        "together",
        "fireworks",
        "groq",
        "hf",
        "bedrock",
        "azureai",
        "llama-cpp-python",
    }
)
"""Providers that serve other makers' models: their ids name the maker next."""


class FamilyRow(Row):
    """The family a model or judge id was assigned, and from where."""

    model: str
    """Model or judge id."""
    family: str
    """Its family (lower case)."""
    source: str
    """``provider`` (from the id) or ``mapping`` (from the --families file)."""


def model_family(model: str, overrides: Mapping[str, str] | None = None) -> str:
    """The family of a model id: an override if one matches, else the provider part."""
    family = _override(model, overrides or {})
    if family is not None:
        return family
    parts = [p for p in model.split("/") if p]
    if not parts:
        return model.lower()
    if parts[0].lower() in GATEWAYS and len(parts) >= 3:
        return parts[1].lower()
    return parts[0].lower()


def _override(model: str, overrides: Mapping[str, str]) -> str | None:
    if model in overrides:
        return overrides[model].lower()
    for pattern, family in overrides.items():
        if fnmatch.fnmatchcase(model, pattern):
            return family.lower()
    return None


def family_rows(models: Iterable[str], overrides: Mapping[str, str]) -> list[FamilyRow]:
    return [
        FamilyRow(
            model=m,
            family=model_family(m, overrides),
            source="mapping" if _override(m, overrides) is not None else "provider",
        )
        for m in dict.fromkeys(models)
    ]


def load_families(path: str | Path) -> dict[str, str]:
    """Read a family mapping file: ``{model id or glob: family}``, every problem reported."""
    data = read_mapping(path, "families-mapping", "expected a mapping of model id -> family")
    errors = []
    for key, value in data.items():
        if not isinstance(key, str) or not key.strip():
            errors.append(ErrorDetail(str(key), "families-key", "a model id or pattern", key))
        if not isinstance(value, str) or not value.strip():
            errors.append(
                ErrorDetail(str(key), "families-value", "the family must be a name", value)
            )
    if errors:
        raise ValidationError([e.in_file(path) for e in errors])
    return {str(k): str(v).strip() for k, v in data.items()}


class SelfPreferenceRow(Row):
    """Does a judge favour its own family's answers more than the other judges do?"""

    setting: str
    """Setting."""
    judge: str
    """Judge model id."""
    family: str
    """The judge's family."""
    own_models: Count
    """Models of that family."""
    other_models: Count
    """Models of other families."""
    reference_judges: str
    """The judges of other families compared against, ``; ``-separated."""
    own_offset: Score
    """Mean over own-family models of (this judge's score - the reference judges' mean)."""
    other_offset: Score
    """The same mean over the other families' models (the judge's general leniency)."""
    self_preference: Score
    """``own_offset - other_offset``: how much more it favours its own family."""
    self_preference_low: Score
    """Lower end of the bootstrap interval of ``self_preference``."""
    self_preference_high: Score
    """Upper end of that interval."""
    note: str | None
    """Why the numbers are missing, when they are."""


def reference_mean(scores: FloatArray, reference: Sequence[int]) -> FloatArray:
    """``(..., M)``: the mean score of each model over the ``reference`` judges."""
    return nanmean(np.moveaxis(scores[..., list(reference), :], -2, -1))


def self_preference(
    scores: FloatArray, judge: int, reference: Sequence[int], own: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """``(own_offset, other_offset)`` over leading axes; ``scores`` is ``(..., J, M)``.

    The offset of a model is the judge's score minus the mean of the ``reference`` judges'
    scores; ``own`` marks the models of the judge's family. Their difference removes the
    judge's uniform leniency, leaving the extra it grants its own family.
    """
    offsets = scores[..., judge, :] - reference_mean(scores, reference)
    return nanmean(offsets[..., own]), nanmean(offsets[..., ~own])


def self_preference_row(
    cube: ScoreCube,
    setting: str,
    j: int,
    point: FloatArray,
    resampled: FloatArray,
    boot: Bootstrap,
    families: Mapping[str, str],
) -> SelfPreferenceRow:
    judge = cube.judges[j]
    family = families[judge]
    reference = [k for k, other in enumerate(cube.judges) if families[other] != family]
    scored = ~np.isnan(point[j])
    own = np.array([families[m] == family for m in cube.models]) & scored
    other = ~own & scored
    row = {
        "setting": setting,
        "judge": judge,
        "family": family,
        "own_models": int(own.sum()),
        "other_models": int(other.sum()),
        "reference_judges": "; ".join(cube.judges[k] for k in reference),
    }
    note = _self_preference_gap(family, reference, own, other)
    if note:
        undefined = dict.fromkeys(SelfPreferenceRow.model_fields.keys() - row.keys() - {"note"})
        return SelfPreferenceRow(**row, **undefined, note=note)
    own_point, other_point = self_preference(point, j, reference, own)
    own_boot, other_boot = self_preference(resampled, j, reference, own)
    return SelfPreferenceRow(
        **row,
        own_offset=number(own_point),
        other_offset=number(other_point),
        **estimate(
            "self_preference", own_point - other_point, *boot.interval(own_boot - other_boot)
        ),
        note=None,
    )


def _self_preference_gap(
    family: str,
    reference: Sequence[int],
    own: npt.NDArray[np.bool_],
    other: npt.NDArray[np.bool_],
) -> str | None:
    """Why self-preference cannot be measured for this judge, or None when it can."""
    if not reference:
        return f"no judge of another family than {family!r} to compare with"
    if not own.any():
        return f"no model of the judge's family {family!r} was scored"
    if not other.any():
        return "no model of another family was scored"
    return None


class JudgeScoreRow(Row):
    """One model's score by one judge, beside the other judges' (Table 2's cells)."""

    setting: str
    """Setting."""
    model: str
    """Model id."""
    judge: str
    """Judge model id."""
    gamut: Score
    """Mean Gamut score by this judge."""
    gamut_low: Score
    """Lower end of its bootstrap interval."""
    gamut_high: Score
    """Upper end of its bootstrap interval."""
    offset: Score
    """``gamut`` minus the mean of the other judges' scores for this model."""


class JudgePairRow(Row):
    """How two judges' rankings of the models agree."""

    setting: str
    """Setting."""
    judge_a: str
    """First judge (in the run's judge order)."""
    judge_b: str
    """Second judge."""
    models: Count
    """Models both judges scored."""
    tau_b: Stat
    """Kendall's tau-b between the two rankings (1: identical order)."""
    tau_b_low: Stat
    """Lower end of the bootstrap interval of ``tau_b``."""
    tau_b_high: Stat
    """Upper end of that interval."""
    swapped_pairs: Count
    """Pairs of models the two judges order differently (listed in ``rank_swaps``)."""
    adjacent_swaps: Count
    """Of those, pairs next to each other in both rankings."""
    mean_gap: Score
    """Mean over models of judge_a's score minus judge_b's."""
    max_abs_gap: Score
    """The largest absolute per-model gap."""
    max_gap_model: str | None
    """The model with that gap."""


class JudgeGapRow(Row):
    """One model's score under one judge minus under another."""

    setting: str
    """Setting."""
    model: str
    """Model id."""
    judge_a: str
    """First judge."""
    judge_b: str
    """Second judge."""
    gap: Score
    """judge_a's score minus judge_b's."""
    gap_low: Score
    """Lower end of the bootstrap interval of ``gap``."""
    gap_high: Score
    """Upper end of that interval."""
    largest: bool
    """Whether this is the largest absolute gap of this pair of judges in this setting."""


class RankSwapRow(Row):
    """Two models that two rankings order differently."""

    comparison: str
    """``judges`` (two judges, one setting) or ``settings`` (two settings, one judge)."""
    context: str
    """The setting (for ``judges``) or the judge (for ``settings``) held fixed."""
    ranking_a: str
    """The first ranking: a judge or a setting."""
    ranking_b: str
    """The second ranking."""
    higher_in_a: str
    """The model ranking a puts higher."""
    higher_in_b: str
    """The model ranking b puts higher."""
    gap_a: Score
    """By how much ``higher_in_a`` leads under ranking a."""
    gap_b: Score
    """By how much ``higher_in_b`` leads under ranking b."""
    adjacent: bool
    """Whether the two are next to each other in both rankings."""


class LeniencyRow(Row):
    """How much higher one judge scores than the other judges, on average over models."""

    setting: str
    """Setting."""
    judge: str
    """Judge model id."""
    models: Count
    """Models in the average."""
    offset: Score
    """Mean over models of (this judge's score - the mean of the other judges' scores)."""
    offset_low: Score
    """Lower end of the bootstrap interval of ``offset``."""
    offset_high: Score
    """Upper end of that interval."""
    offset_min: Score
    """Smallest per-model offset (a uniform leniency has min close to max)."""
    offset_max: Score
    """Largest per-model offset."""


def leniency_offset(scores: FloatArray, judge: int) -> tuple[FloatArray, FloatArray]:
    """Per-model offsets ``(..., M)`` and their mean over models ``(...)``.

    ``scores`` is ``(..., J, M)``; the offset of model m is this judge's score minus the
    mean of the other judges' scores for m.
    """
    others = [k for k in range(scores.shape[-2]) if k != judge]
    per_model = scores[..., judge, :] - reference_mean(scores, others)
    return per_model, nanmean(per_model)


def rank_swap_rows(
    comparison: str,
    context: str,
    names: tuple[str, str],
    a: FloatArray,
    b: FloatArray,
    models: Sequence[str],
) -> list[RankSwapRow]:
    return [
        RankSwapRow(
            comparison=comparison,
            context=context,
            ranking_a=names[0],
            ranking_b=names[1],
            higher_in_a=models[p.higher_in_a],
            higher_in_b=models[p.higher_in_b],
            gap_a=number(a[p.higher_in_a] - a[p.higher_in_b]),
            gap_b=number(b[p.higher_in_b] - b[p.higher_in_a]),
            adjacent=p.adjacent,
        )
        for p in swapped_pairs(a.tolist(), b.tolist())
    ]


def judge_robustness(
    cube: ScoreCube, means: Means, boot: Bootstrap, families: Mapping[str, str]
) -> dict[str, list[Row]]:
    """Every Table 2 analysis, per setting, by table name (with its ``rank_swaps``).
    ``families`` maps model and judge ids to families (``model_family``). Empty tables
    with fewer than two judges."""
    tables = "judge_scores judge_pairs judge_gaps rank_swaps leniency self_preference"
    out: dict[str, list[Row]] = {name: [] for name in tables.split()}
    if len(cube.judges) < 2:
        return out
    for s, setting in enumerate(cube.settings):
        point, resampled = means.point[s], means.boot[:, s]
        out["judge_scores"].extend(_score_rows(cube, setting, point, resampled, boot))
        for a, b in combinations(range(len(cube.judges)), 2):
            _pair(cube, setting, (a, b), point, resampled, boot, out)
        for j in range(len(cube.judges)):
            out["leniency"].append(_leniency_row(cube, setting, j, point, resampled, boot))
            out["self_preference"].append(
                self_preference_row(cube, setting, j, point, resampled, boot, families)
            )
    return out


def _score_rows(
    cube: ScoreCube, setting: str, point: FloatArray, resampled: FloatArray, boot: Bootstrap
) -> list[JudgeScoreRow]:
    low, high = boot.interval(resampled)
    rows = []
    for j, judge in enumerate(cube.judges):
        offsets, _ = leniency_offset(point, j)
        for m, model in enumerate(cube.models):
            if not np.isnan(point[j, m]):
                rows.append(
                    JudgeScoreRow(
                        setting=setting,
                        model=model,
                        judge=judge,
                        **estimate("gamut", point[j, m], low[j, m], high[j, m]),
                        offset=number(offsets[m]),
                    )
                )
    return rows


def _pair(
    cube: ScoreCube,
    setting: str,
    pair: tuple[int, int],
    point: FloatArray,
    resampled: FloatArray,
    boot: Bootstrap,
    out: dict[str, list[Row]],
) -> None:
    a, b = pair
    names = (cube.judges[a], cube.judges[b])
    gaps = point[a] - point[b]
    gap_low, gap_high = boot.interval(resampled[:, a] - resampled[:, b])
    both = ~np.isnan(gaps)
    largest = int(np.nanargmax(np.abs(gaps))) if both.any() else -1
    swaps = rank_swap_rows("judges", setting, names, point[a], point[b], cube.models)
    out["rank_swaps"].extend(swaps)
    out["judge_pairs"].append(
        JudgePairRow(
            setting=setting,
            judge_a=names[0],
            judge_b=names[1],
            models=int(both.sum()),
            **estimate(
                "tau_b",
                kendall_tau_b(point[a], point[b]),
                *boot.interval(kendall_tau_b(resampled[:, a], resampled[:, b])),
            ),
            swapped_pairs=len(swaps),
            adjacent_swaps=sum(s.adjacent for s in swaps),
            mean_gap=number(nanmean(gaps)),
            max_abs_gap=number(abs(gaps[largest])) if largest >= 0 else None,
            max_gap_model=cube.models[largest] if largest >= 0 else None,
        )
    )
    out["judge_gaps"].extend(
        JudgeGapRow(
            setting=setting,
            model=cube.models[m],
            judge_a=names[0],
            judge_b=names[1],
            **estimate("gap", gaps[m], gap_low[m], gap_high[m]),
            largest=m == largest,
        )
        for m in np.flatnonzero(both)
    )


def _leniency_row(
    cube: ScoreCube,
    setting: str,
    j: int,
    point: FloatArray,
    resampled: FloatArray,
    boot: Bootstrap,
) -> LeniencyRow:
    per_model, offset = leniency_offset(point, j)
    defined = per_model[~np.isnan(per_model)]
    return LeniencyRow(
        setting=setting,
        judge=cube.judges[j],
        models=len(defined),
        **estimate("offset", offset, *boot.interval(leniency_offset(resampled, j)[1])),
        offset_min=number(defined.min()) if len(defined) else None,
        offset_max=number(defined.max()) if len(defined) else None,
    )


MULTIMODAL = "multimodal"
TEXT_ONLY = "text_only"


class ModalityRow(Row):
    """One model's score with and without the image, by one judge."""

    judge: str
    """Judge model id."""
    model: str
    """Model id."""
    questions: Count
    """Questions scored in both settings."""
    multimodal: Score
    """Mean Gamut score with the image."""
    text_only: Score
    """Mean Gamut score with the entity named in text."""
    gap: Score
    """``text_only - multimodal``: what identifying the entity from the image costs."""
    gap_low: Score
    """Lower end of the bootstrap interval of ``gap`` (questions resampled in pairs)."""
    gap_high: Score
    """Upper end of that interval."""


class ModalitySummaryRow(Row):
    """Whether the ranking survives removing the image, and how constant the gap is."""

    judge: str
    """Judge model id."""
    models: Count
    """Models scored in both settings."""
    tau_b: Stat
    """Kendall's tau-b between the multimodal and the text-only ranking."""
    tau_b_low: Stat
    """Lower end of its bootstrap interval."""
    tau_b_high: Stat
    """Upper end of that interval."""
    swapped_pairs: Count
    """Pairs of models the two settings order differently (listed in ``rank_swaps``)."""
    gap_mean: Score
    """Mean gap over models."""
    gap_sd: Score
    """Standard deviation of the gap over models (n - 1): the spread of the tax."""
    gap_sd_low: Score
    """Lower end of the bootstrap interval of ``gap_sd``."""
    gap_sd_high: Score
    """Upper end of that interval."""
    gap_min: Score
    """Smallest per-model gap."""
    gap_max: Score
    """Largest per-model gap."""
    gap_corr: Stat
    """Pearson correlation across models between the gap and the multimodal score."""
    gap_corr_low: Stat
    """Lower end of the bootstrap interval of ``gap_corr``."""
    gap_corr_high: Stat
    """Upper end of that interval."""


def gap_spread(gaps: npt.ArrayLike) -> FloatArray:
    """Sample standard deviation (n - 1) over the last axis, NaNs left out; NaN below 2."""
    values = np.asarray(gaps, dtype=np.float64)
    valid = ~np.isnan(values)
    count = valid.sum(axis=-1)
    centred = np.where(valid, values - nanmean(values)[..., None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = (centred**2).sum(axis=-1) / (count - 1)
    return np.asarray(np.where(count >= 2, np.sqrt(variance), np.nan))


def modality_tables(cube: ScoreCube, means: Means, boot: Bootstrap) -> dict[str, list[Row]]:
    """Per-model rows, one summary per judge, and the swapped pairs, by table name; empty
    unless the run has both the multimodal and the text-only setting."""
    out: dict[str, list[Row]] = {"modality": [], "modality_summary": [], "rank_swaps": []}
    mm, text = cube.setting_index(MULTIMODAL), cube.setting_index(TEXT_ONLY)
    if mm is None or text is None:
        return out
    paired = ~np.isnan(cube.gamut[mm]) & ~np.isnan(cube.gamut[text])
    for j, judge in enumerate(cube.judges):
        point_mm, point_text = means.point[mm, j], means.point[text, j]
        boot_mm, boot_text = means.boot[:, mm, j], means.boot[:, text, j]
        gaps = point_text - point_mm
        gap_low, gap_high = boot.interval(boot_text - boot_mm)
        order = np.argsort(-np.nan_to_num(point_mm, nan=-np.inf), kind="stable")
        for m in (m for m in order if not np.isnan(gaps[m])):
            out["modality"].append(
                ModalityRow(
                    judge=judge,
                    model=cube.models[m],
                    questions=int(paired[j, m].sum()),
                    multimodal=number(point_mm[m]),
                    text_only=number(point_text[m]),
                    **estimate("gap", gaps[m], gap_low[m], gap_high[m]),
                )
            )
        names = (MULTIMODAL, TEXT_ONLY)
        judge_swaps = rank_swap_rows("settings", judge, names, point_mm, point_text, cube.models)
        out["rank_swaps"].extend(judge_swaps)
        out["modality_summary"].append(
            _summary(judge, (point_mm, point_text), (boot_mm, boot_text), boot, len(judge_swaps))
        )
    return out


def _summary(
    judge: str,
    point: tuple[FloatArray, FloatArray],
    resampled: tuple[FloatArray, FloatArray],
    boot: Bootstrap,
    swapped: int,
) -> ModalitySummaryRow:
    gaps = point[1] - point[0]
    boot_gaps = resampled[1] - resampled[0]
    defined = gaps[~np.isnan(gaps)]
    return ModalitySummaryRow(
        judge=judge,
        models=len(defined),
        **estimate("tau_b", kendall_tau_b(*point), *boot.interval(kendall_tau_b(*resampled))),
        swapped_pairs=swapped,
        gap_mean=number(nanmean(gaps)),
        **estimate("gap_sd", gap_spread(gaps), *boot.interval(gap_spread(boot_gaps))),
        gap_min=number(defined.min()) if len(defined) else None,
        gap_max=number(defined.max()) if len(defined) else None,
        **estimate(
            "gap_corr", pearson(gaps, point[0]), *boot.interval(pearson(boot_gaps, resampled[0]))
        ),
    )
