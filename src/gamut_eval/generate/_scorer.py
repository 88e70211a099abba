"""The Gamut scorer for Inspect: judge every check of an answer, score it, keep the verdicts.

``inspect score LOG --scorer gamut_eval/gamut_scorer -S judge=M2 -S dataset=D`` re-scores a
log with another judge. A check the judge could not grade is unscored (left out of the
score and listed as unscored in the explanation and the metadata), never counted against
the model. What the score holds is ``_score_view.score_parts``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gamut_eval.data import resolve_dataset_path
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.generate._score_view import score_parts
from gamut_eval.judge import (
    JudgePlan,
    JudgeSettings,
    MemoryStore,
    Store,
    VerdictStore,
    make_backend,
    require_judge_extras,
    resolve_judge,
    run_pass,
)
from gamut_eval.responses import ResponseRow
from gamut_eval.rubric import TIERS

if TYPE_CHECKING:
    from inspect_ai.scorer import Score, Target
    from inspect_ai.solver import TaskState

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
