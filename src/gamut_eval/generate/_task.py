"""The Inspect task: ``inspect eval gamut_eval/gamut --model M -T dataset=... -T judge=...``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gamut_eval.data import resolve_dataset_path
from gamut_eval.dataset import load_dataset
from gamut_eval.errors import InputError
from gamut_eval.generate._samples import Setting, samples_for

if TYPE_CHECKING:
    from inspect_ai import Task

__all__ = ["SETTING_CHOICES", "gamut_task"]

SETTING_CHOICES = ("multimodal", "text_only")


def gamut_task(
    dataset: str | None = None,
    setting: str = "multimodal",
    judge: str | None = None,
    judge_image: bool = False,
    store: str | None = None,
) -> Task:
    """The GAMUT benchmark as an Inspect task in one setting.

    Args:
        dataset: Dataset JSONL, or ``sample`` (default) for the bundled sample benchmark.
        setting: ``multimodal`` (image + question) or ``text_only`` (entity named in text).
        judge: Judge model; when given, each answer is scored with the Gamut scorer and every
            check's verdict is stored in the score's metadata. Without it the task only
            generates answers (score them later with ``inspect score`` or ``gamut judge``).
        judge_image: Show the judge the image too.
        store: Verdict store for the scorer (SQLite), so re-scoring is incremental.
    """
    from inspect_ai import Task
    from inspect_ai.solver import generate

    from gamut_eval.generate._inspect_scorer import gamut_scorer

    if setting not in SETTING_CHOICES:
        raise InputError(f"setting must be one of {', '.join(SETTING_CHOICES)}; got {setting!r}")
    path = resolve_dataset_path(dataset)
    data = load_dataset(path)
    setting_name: Setting = "multimodal" if setting == "multimodal" else "text_only"
    scorer = (
        gamut_scorer(judge=judge, dataset=str(path), judge_image=judge_image, store=store)
        if judge
        else None
    )
    return Task(
        name=f"gamut_{setting}",
        dataset=samples_for(data, setting_name),
        solver=generate(),
        scorer=scorer,
        metadata={"gamut_dataset": str(path), "gamut_setting": setting},
    )
