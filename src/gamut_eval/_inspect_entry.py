"""What gamut-eval registers with Inspect AI (the ``inspect_ai`` entry point).

    inspect eval gamut_eval/gamut --model M -T dataset=sample -T judge=J -T setting=text_only
    inspect score LOG.eval --scorer gamut_eval/gamut_scorer -S judge=J2 -S dataset=D

Importing this module imports Inspect AI; the rest of the package does so only on demand.
"""

from __future__ import annotations

import logging

from inspect_ai import Task, task

from gamut_eval.generate import (
    NO_JUDGE,
    gamut_scorer as gamut_scorer,
    gamut_task,
    mean as mean,
    scored_mean as scored_mean,
    stderr as stderr,
)


@task
def gamut(
    dataset: str | None = None,
    setting: str = "multimodal",
    judge: str | None = None,
    judge_image: bool = False,
    store: str | None = None,
) -> Task:
    """The GAMUT benchmark (default: the bundled sample) in one setting."""
    if not judge:  # answers only: say how to get scores
        logging.getLogger(__name__).warning(NO_JUDGE.format(dataset=dataset or "sample"))
    return gamut_task(
        dataset=dataset, setting=setting, judge=judge, judge_image=judge_image, store=store
    )
