"""What an Inspect score of one answer holds: values, an explanation, labelled metadata.

Inspect's viewer (``inspect view``) shows a score's ``explanation`` as text (markdown) and
its ``metadata`` as a tree whose nested objects are folded into ``Object(n)``. So the
explanation says what a reader wants first (the score, then each failed check with its
verdict, then the checks the judge could not grade), and the metadata is flat: counts, and
one mapping per field keyed by check id whose values are plain strings, each row readable
as ``check id: value`` without unfolding anything.

A check the judge could not grade is *unscored*: it is left out of the score and listed
as such, never counted (or shown) as missing.

Imports nothing from Inspect: the scorer and the log writer both call it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gamut_eval.judge import PROMPT_VERSION, StoredVerdict
from gamut_eval.rubric import TIERS, Checklist, Tier
from gamut_eval.scoring import Verdict

if TYPE_CHECKING:
    from gamut_eval.scoring import ScoringParams

SHOWN_DIGITS = 4
"""Decimal places of the metrics an Inspect log shows (means and standard errors of scores
in [-1, 1]): what the view prints, without floating-point tails (0.06, not
0.060000000000000005). The samples' values and the run's scores.jsonl keep every digit."""

VERDICT_WORDS = {verdict.value: verdict.words for verdict in Verdict}
"""Each verdict as the explanation writes it."""
_TIER_WORDS = {"answer_critical": "answer-critical", "valuable": "valuable", "context": "context"}
_NOTE_CHARS = 240
"""The judge's explanation of a failed check is cut to this many characters."""


@dataclass(frozen=True)
class ScoreParts:
    """The three parts of an Inspect ``Score`` of one answer by one judge."""

    value: dict[str, float]
    """``gamut`` and each tier, NaN where there is nothing to score (every digit: the
    metrics over them are rounded where shown)."""
    explanation: str
    metadata: dict[str, Any]


def shown(value: float) -> float:
    """``value`` rounded to ``SHOWN_DIGITS`` places (NaN stays NaN)."""
    return round(value, SHOWN_DIGITS) if math.isfinite(value) else value


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _NOTE_CHARS else text[: _NOTE_CHARS - 1] + "…"


def _number(value: float) -> str:
    return f"{value:+.3f}"


def _headline(value: dict[str, float], tiers_with_checks: set[str], judge: str) -> str:
    gamut = value["gamut"]
    head = f"**Gamut {_number(gamut)}**" if math.isfinite(gamut) else "**No Gamut score**"
    parts = []
    for tier in TIERS:
        name = _TIER_WORDS[tier.value]
        if tier.value not in tiers_with_checks:
            parts.append(f"{name}: no checks")
        elif math.isfinite(value[tier.value]):
            parts.append(f"{name} {_number(value[tier.value])}")
        else:
            parts.append(f"{name}: none graded")
    line = f"{head} ({', '.join(parts)}), judge `{judge}`."
    if not math.isfinite(gamut):
        line += (
            " A tier that has checks has none the judge could grade, so the answer gets no "
            "score (a judge failure is not the model's)."
        )
    return line


def score_parts(
    judge: str,
    checklist: Checklist,
    rows: Sequence[StoredVerdict],
    params: ScoringParams | None = None,
) -> ScoreParts:
    """Values, explanation and metadata of one answer's score from its stored verdicts
    (``rows`` in the order of ``checklist.checks``), scored with ``params``."""
    from gamut_eval.scoring import score_response

    pairs = list(zip(checklist.checks, rows, strict=True))
    card = score_response(checklist, {c.id: r.verdict for c, r in pairs}, params)
    value = {"gamut": math.nan if card.gamut is None else card.gamut}
    value |= {t.value: card.tiers.get(t, math.nan) for t in TIERS}
    counts = dict.fromkeys((*VERDICT_WORDS, "unscored"), 0)
    for _, row in pairs:
        counts[row.verdict or "unscored"] += 1
    failed = [(c, r) for c, r in pairs if r.verdict is not None and r.verdict != Verdict.MEETS]
    unscored = [(c, r) for c, r in pairs if r.verdict is None]
    lines = [_headline(value, {t.value for t in card.counts}, judge), ""]
    met = ", ".join(f"{counts[v]} {VERDICT_WORDS[v]}" for v in VERDICT_WORDS)
    lines.append(f"{len(pairs)} checks: {met}, {counts['unscored']} unscored.")
    if failed:
        lines += ["", f"Failed checks ({len(failed)}):", ""]
        for check, row in failed:
            note = f" Judge: {_short(row.explanation)}" if row.explanation.strip() else ""
            lines.append(
                f"- `{check.id}` ({_TIER_WORDS[check.tier.value]}): "
                f"**{VERDICT_WORDS[row.verdict or '']}**. {_short(check.text)}{note}"
            )
    elif pairs and not unscored:
        lines += ["", "Every check is met."]
    if unscored:
        lines += [
            "",
            f"Unscored checks ({len(unscored)}): the judge could not grade them; they are left "
            "out of the score, not counted as missing.",
            "",
        ]
        for check, row in unscored:
            lines.append(
                f"- `{check.id}` ({_TIER_WORDS[check.tier.value]}): **unscored** "
                f"({row.reason or 'no reason recorded'}). {_short(check.text)}"
            )
    return ScoreParts(value, "\n".join(lines), _metadata(judge, card.counts, counts, pairs))


def _metadata(
    judge: str,
    tier_counts: dict[Tier, Any],
    counts: dict[str, int],
    pairs: list[tuple[Any, StoredVerdict]],
) -> dict[str, Any]:
    """Flat, labelled fields: scalars, and mappings check id -> string."""
    return {
        "judge": judge,
        "prompt_version": PROMPT_VERSION,
        "checks": len(pairs),
        **counts,
        "verdicts": {c.id: r.verdict or "unscored" for c, r in pairs},
        "tiers": {c.id: c.tier.value for c, _ in pairs},
        "check_texts": {c.id: c.text for c, _ in pairs},
        "judge_explanations": {
            c.id: r.explanation if r.verdict is not None else f"unscored: {r.reason or '?'}"
            for c, r in pairs
        },
        "tier_counts": {
            tier.value: ", ".join(f"{n} {k}" for k, n in tc.model_dump().items() if n)
            for tier, tc in tier_counts.items()
        },
    }
