"""Candidate answers from any number of models, through an Inspect eval set.

An eval set retries failed samples and, when rerun on the same log folder, keeps what
finished; the logs stay for ``inspect view``. Responses are then exported from the logs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval._extras import model_extras, require_extras
from gamut_eval._files import atomic_writer
from gamut_eval.errors import GamutError
from gamut_eval.generate._task import SETTING_CHOICES, gamut_task

if TYPE_CHECKING:
    from gamut_eval.generate._settings import GenerationSettings


class GenerationIncomplete(GamutError):
    """Some samples have no answer after the eval set's retries; rerun to continue."""


def settings_for(setting: str) -> list[str]:
    """``both`` -> both settings; a single setting name -> itself."""
    return list(SETTING_CHOICES) if setting == "both" else [setting]


def generate_responses(
    dataset: Path,
    models: Sequence[str],
    setting: str,
    log_dir: Path,
    out: Path,
    *,
    max_connections: int | None = None,
    display: str | None = None,
    retry_attempts: int = 3,
    generation: GenerationSettings | None = None,
    probe: bool = True,
    image_root: Path | None = None,
) -> int:
    """Run the eval set and export every answer to ``out`` (JSONL); returns the row count.

    ``generation`` (default: the provider's defaults, one epoch) is passed to Inspect: its
    ``GenerateConfig`` fields and ``epochs`` to ``eval_set``, ``model_args`` as the models'
    arguments, the system message as a solver of the task. With several epochs there is one
    row per (question, model, setting, epoch), ``epoch`` in its metadata.
    ``probe``: first send each model one tiny request (``probe_models``), so a dead URL,
    wrong model or key, or a model refusing images ends here with ``ProbeFailed``.
    ``display``: Inspect's display; by default the rich one on a terminal and ``plain``
    (a line of progress at a time) when standard error is not one, as in CI logs.
    Raises ``GenerationIncomplete`` (after writing what exists) when samples are missing.
    """
    require_extras(
        (e for m in models for e in model_extras(m)), "answering with " + ", ".join(models)
    )
    from inspect_ai import eval_set

    from gamut_eval.generate._settings import GenerationSettings

    generation = generation or GenerationSettings()
    if probe:
        from gamut_eval.generate._probe import probe_models

        probe_models(models, setting, generation)
    tasks = [
        gamut_task(
            dataset=str(dataset),
            setting=s,
            system_message=generation.system_message,
            image_root=str(image_root) if image_root else None,
        )
        for s in settings_for(setting)
    ]
    kwargs: dict[str, Any] = generation.generate_config()
    if max_connections is not None:
        kwargs["max_connections"] = max_connections
    eval_set(
        tasks,
        log_dir=str(log_dir),
        model=list(models),
        model_args=dict(generation.model_args),
        epochs=generation.epochs,
        retry_attempts=retry_attempts,
        retry_wait=1,
        display=display or _default_display(),
        score=False,
        **kwargs,
    )
    expected = len(tasks[0].dataset) * len(tasks) * len(models) * generation.epochs
    return export_responses(log_dir, out, expected=expected)


def _default_display() -> Any:
    """Inspect's own default (or ``INSPECT_DISPLAY``) on a terminal, else ``plain``."""
    if os.environ.get("INSPECT_DISPLAY") or sys.stderr.isatty():
        return None
    return "plain"


def _rows(log_dir: Path) -> Iterator[dict[str, Any]]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    for info in list_eval_logs(str(log_dir)):
        log = read_eval_log(info)
        setting = str(
            log.eval.task_args.get("setting") or (log.eval.metadata or {}).get("gamut_setting", "")
        )
        for sample in log.samples or []:
            if sample.error is not None or not sample.output.choices:
                continue
            usage = {
                model: u.model_dump(exclude_none=True)
                for model, u in (sample.model_usage or {}).items()
            }
            yield {
                "question_id": str(sample.metadata.get("question_id", sample.id)),
                "model": log.eval.model,
                "setting": str(sample.metadata.get("setting", setting)),
                "response": sample.output.completion,
                "usage": usage or None,
                "metadata": {"inspect_log": Path(info.name).name, "epoch": sample.epoch},
            }


def export_responses(log_dir: Path, out: Path, expected: int | None = None) -> int:
    """Write one row per answered (question, model, setting, epoch) found in the logs.

    Later logs win over earlier ones for the same identity (a retried eval replaces a
    failed one).
    """
    rows: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for row in _rows(log_dir):
        key = (row["question_id"], row["model"], row["setting"], row["metadata"]["epoch"])
        rows[key] = row
    with atomic_writer(out) as handle:
        for key in sorted(rows):
            handle.write(json.dumps(rows[key], ensure_ascii=False) + "\n")
    if expected is not None and len(rows) < expected:
        raise GenerationIncomplete(
            f"{expected - len(rows)} of {expected} answers are missing after retries (see the "
            f"logs in {log_dir}); run the same command again to continue where it stopped"
        )
    return len(rows)
