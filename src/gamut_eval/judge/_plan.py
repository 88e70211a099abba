"""What one judge is asked to grade: every (response, check) pair of a set of answers.

A ``JudgePlan`` is the dataset, the answers (a responses file, streamed, or rows in
memory) and one judge's settings. It validates the answers when it is made, so bad input
is refused before any store is opened, and yields one ``PlannedResponse`` per answer:
the question as the model was asked it, the checks, and each check's store key. Keys hash
everything that determines a verdict (docs/method.md, judge keys; for a built-in judge,
its revision: ``_builtin.py``), so the store can say what is already done. Iterating
twice reads the answers twice: plans stay streaming, and memory does not grow with the
size of the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gamut_eval.dataset import Dataset
from gamut_eval.judge._builtin import keyed_judge
from gamut_eval.judge._prompt import JudgeImage, check_key, response_digest
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.responses import ResponseRow, check_responses, iter_responses
from gamut_eval.rubric import Check, Checklist

__all__ = ["JudgePlan", "PlannedResponse", "judge_image"]


@dataclass(frozen=True, slots=True)
class PlannedResponse:
    """One answer with its checks and their store keys (no prompt rendered yet)."""

    row: ResponseRow
    question: str
    """The question as the model was asked it in this setting."""
    checks: tuple[Check, ...]
    keys: tuple[str, ...]
    image_path: Path | None
    """The image the judge is shown, when ``judge_image`` is on in the multimodal setting."""


@lru_cache(maxsize=64)
def judge_image(path: Path) -> JudgeImage:
    """An image read and encoded once per run, however many answers show it."""
    return JudgeImage.from_path(path)


class JudgePlan:
    """Every (answer, check) pair one judge is to grade.

    ``responses`` is a responses file (validated here against the dataset: fields, known
    questions, no duplicates) or rows already in memory (trusted; the Inspect scorer hands
    one answer at a time). ``checklists`` saves compiling the dataset again when the
    caller already holds its checklists.
    """

    def __init__(
        self,
        dataset: Dataset,
        responses: str | Path | Sequence[ResponseRow],
        settings: JudgeSettings,
        *,
        total: int | None = None,
        checklists: Mapping[str, Checklist] | None = None,
    ) -> None:
        self.dataset = dataset
        self.settings = settings
        self._checklists = checklists if checklists is not None else dataset.checklists()
        if isinstance(responses, str | Path):
            self.path: Path | None = Path(responses)
            self._rows: Sequence[ResponseRow] = ()
            if total is None:
                per_question = check_responses(self.path, set(dataset.by_id()))
                total = sum(n * len(self._checklists[q].checks) for q, n in per_question.items())
        else:
            self.path = None
            self._rows = responses
            if total is None:
                total = sum(len(self._checklists[r.question_id].checks) for r in responses)
        self.total = total
        """(answer, check) pairs in the plan."""

    def for_judge(self, settings: JudgeSettings) -> JudgePlan:
        """The same answers for another judge, without validating them again."""
        source: str | Path | Sequence[ResponseRow] = self.path or self._rows
        return JudgePlan(
            self.dataset, source, settings, total=self.total, checklists=self._checklists
        )

    def _answers(self) -> Iterable[ResponseRow]:
        if self.path is None:
            return self._rows
        return (row for _, row in iter_responses(self.path))

    def __iter__(self) -> Iterator[PlannedResponse]:
        settings = self.settings
        keyed = keyed_judge(settings.judge)
        records = self.dataset.by_id()
        for row in self._answers():
            record = records[row.question_id]
            question = record.question_for(row.setting)
            image = None
            if settings.judge_image and row.setting == "multimodal":
                image = self.dataset.image_path(record)
            image_sha = judge_image(image).sha256 if image else None
            digest = response_digest(keyed, question, row.response, image_sha)
            checks = self._checklists[row.question_id].checks
            keys = tuple(check_key(digest, c.text) for c in checks)
            yield PlannedResponse(row, question, checks, keys, image)


def complete_answers(plan: JudgePlan) -> None:
    """Refuse a plan whose answers leave a gap: for every (model, setting) the answers
    name, every question of the dataset must be answered (an ``InputError`` naming the
    count and the first few missing)."""
    from gamut_eval.responses import complete_responses

    rows = list(plan._answers())
    by_setting: dict[str, set[str]] = {}
    for row in rows:
        by_setting.setdefault(row.setting, set()).add(row.model)
    questions = [record.id for record in plan.dataset]
    for setting, models in sorted(by_setting.items()):
        kept = [r for r in rows if r.setting == setting]
        complete_responses(kept, questions, sorted(models), [setting], source=plan.path)
