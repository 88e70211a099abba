"""The Gamut scorer for Inspect: judge every check of an answer, score it, keep the verdicts.

``inspect score LOG --scorer gamut_eval/gamut_scorer -S judge=M2 -S dataset=D`` re-scores a
log with another judge. A check the judge could not grade is *unscored*: it is left out of
the score and listed as such (in the explanation and the metadata), never counted (or
shown) as missing, so a judge failure is not the model's.

What the score holds is ``score_parts``. Inspect's viewer (``inspect view``) shows a
score's ``explanation`` as text (markdown) and its ``metadata`` as a tree whose nested
objects are folded into ``Object(n)``. So the explanation says what a reader wants first
(the score, then each failed check with its verdict, then the checks the judge could not
grade), and the metadata is flat: counts, and one mapping per field keyed by check id
whose values are plain strings, each row readable as ``check id: value`` without
unfolding anything.

Imports nothing from Inspect: the registered scorer (``_inspect_scorer``) and the log
writer (``_logs``) both call it.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval.data import resolve_dataset_path
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.judge import (
    PROMPT_VERSION,
    JudgePlan,
    JudgeSettings,
    MemoryStore,
    Store,
    StoredVerdict,
    VerdictStore,
    make_backend,
    require_judge_extras,
    resolve_judge,
    run_pass,
)
from gamut_eval.responses import ResponseRow
from gamut_eval.rubric import TIERS, Checklist, Tier
from gamut_eval.scoring import Verdict

if TYPE_CHECKING:
    from inspect_ai.scorer import Score, Target
    from inspect_ai.solver import TaskState

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


SCORE_KEYS = ("gamut", *(t.value for t in TIERS))

_STORES: dict[Path, VerdictStore] = {}


def _store(path: str | None) -> Store:
    """One writer per store per process (several tasks of an eval set share it); without
    a path, the verdicts live as long as the scored answer."""
    if path is None:
        return MemoryStore()
    key = Path(path).resolve()
    if key not in _STORES:
        _STORES[key] = VerdictStore(key)
    return _STORES[key]


def build_score_fn(
    judge: str,
    dataset: str | None = None,
    judge_image: bool = False,
    store: str | None = None,
    backend: str = "auto",
    concurrency: int = 16,
) -> Callable[[TaskState, Target], Awaitable[Score]]:
    """The scoring function behind ``gamut_eval/gamut_scorer`` (see ``_inspect_entry.py``)."""
    settings = JudgeSettings.model_validate(
        {"judge": judge, "judge_image": judge_image, "backend": backend, "concurrency": concurrency}
    )
    resolved = resolve_judge(settings)  # once: every answer's pass reads the same record
    require_judge_extras([resolved])  # when the task is made, before the eval writes a log
    data: Dataset = load_dataset(resolve_dataset_path(dataset))
    checklists = data.checklists()
    records = data.by_id()

    async def score(task_state: TaskState, target: Target) -> Score:
        from inspect_ai.scorer import Score

        qid = str(task_state.metadata.get("question_id", task_state.sample_id))
        setting = str(task_state.metadata.get("setting", "multimodal"))
        if qid not in records:
            raise InputError(f"sample {qid!r} is not a question of {data.path}")
        checklist = checklists[qid]
        answer = task_state.output.completion
        row = ResponseRow(
            question_id=qid, model=str(task_state.model), setting=setting, response=answer
        )
        plan = JudgePlan(data, [row], settings, checklists=checklists)
        # Inspect gives scorers no teardown, and clients hold connections bound to one
        # event loop: the pass makes a client for this answer and closes it when done.
        verdicts = _store(store)
        await run_pass(plan, make_backend(resolved), verdicts)
        [planned] = list(plan)
        found = verdicts.get(planned.keys)
        rows = [found[key] for key in planned.keys]
        parts = score_parts(settings.judge, checklist, rows)
        return Score(
            value=parts.value,
            answer=answer,
            explanation=parts.explanation,
            metadata=parts.metadata,
        )

    return score
