"""A whole evaluation as a user runs it: answers, verdicts from each judge, scores.

    RUN_DIR/responses.jsonl   one row per (question, model, setting)
    RUN_DIR/verdicts.jsonl    one row per (response, check, judge), as `gamut judge` writes
    RUN_DIR/scores.jsonl      one row per (response, judge): gamut, tiers, counts
    RUN_DIR/summary.json      per (model, setting, judge): mean scores and unscored rate
    RUN_DIR/run.json          the configuration, recorded for reproducibility
    RUN_DIR/store.sqlite      the verdict store (what makes a rerun continue, not restart)
    RUN_DIR/logs/             Inspect logs of the generation (`inspect view`)

Interrupted and rerun with the same arguments, it continues where it stopped: the eval
set keeps finished samples and the store keeps finished verdicts.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from gamut_eval import __version__
from gamut_eval._files import atomic_writer, read_jsonl
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.judge._engine import JudgeStats
from gamut_eval.judge._prompt import PROMPT_VERSION
from gamut_eval.judge._run import (
    JudgeReport,
    UnscoredRateExceeded,
    check_unscored_rate,
    count_checks,
    judge_into_store,
    verdict_rows,
    write_verdict_rows,
)
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import VerdictStore
from gamut_eval.responses import check_responses
from gamut_eval.scoring import COUNT_COLUMNS, ScoringParams, score_table, summarise_scores

__all__ = ["RunHooks", "RunResult", "run_benchmark", "score_rows"]


class RunHooks:
    """Progress callbacks (no-ops here; the CLI overrides them with progress bars)."""

    def judge_start(self, judge: str, total: int) -> None:
        """Judging with ``judge`` starts; ``total`` (response, check) pairs."""

    def judge_progress(self, judge: str, stats: JudgeStats) -> None:
        """Called often while judging; throttle any display."""

    def judge_done(self, judge: str, stats: JudgeStats) -> None:
        """Judging with ``judge`` finished."""


@dataclass(frozen=True)
class RunResult:
    out_dir: Path
    summary: pd.DataFrame
    reports: dict[str, JudgeReport] = field(default_factory=dict)


def _copy_responses(source: Path, target: Path, setting: str, question_ids: set[str]) -> None:
    """Use an existing responses file: validated, filtered to the setting, copied in."""
    check_responses(source, question_ids)
    if setting == "both" and source.resolve() == target.resolve():
        return
    with atomic_writer(target) as handle:
        for _, row in read_jsonl(source):
            if setting == "both" or row.get("setting") == setting:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def score_rows(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Score-table rows as JSON-ready dicts: keys, ``gamut``, ``tiers``, ``counts``."""
    from gamut_eval.rubric._model import TIERS

    keys = [c for c in ("question_id", "model", "setting", "judge") if c in scores.columns]
    out = []
    for record in scores.to_dict(orient="records"):
        row = {k: record[k] for k in keys}
        row["gamut"] = None if math.isnan(record["gamut"]) else record["gamut"]
        row["tiers"] = {t.value: record[t.value] for t in TIERS if not math.isnan(record[t.value])}
        counts: dict[str, dict[str, int]] = {}
        for column in COUNT_COLUMNS:
            tier, verdict = column.split(".")
            counts.setdefault(tier, {})[verdict] = int(record[column])
        row["counts"] = {t: c for t, c in counts.items() if sum(c.values())}
        out.append(row)
    return out


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {str(k): (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]


def _write_json(path: Path, data: Any) -> None:
    with atomic_writer(path) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def _run_config(
    dataset: Dataset,
    models: Sequence[str],
    responses: Path | None,
    setting: str,
    judges: Sequence[JudgeSettings],
    params: ScoringParams,
) -> dict[str, Any]:
    return {
        "gamut_eval_version": __version__,
        "python": platform.python_version(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "dataset": str(dataset.path),
        "questions": len(dataset),
        "models": list(models),
        "responses_from": str(responses) if responses else "generated",
        "setting": setting,
        "prompt_version": PROMPT_VERSION,
        "judges": [j.model_dump(mode="json") for j in judges],
        "scoring": params.model_dump(mode="json"),
    }


def run_benchmark(
    dataset_path: Path,
    out_dir: Path,
    judges: Sequence[JudgeSettings],
    *,
    models: Sequence[str] = (),
    responses: Path | None = None,
    setting: str = "both",
    params: ScoringParams | None = None,
    hooks: RunHooks | None = None,
    max_connections: int | None = None,
) -> RunResult:
    """Generate (or take) answers, judge them with every judge, score, write RUN_DIR."""
    params = params or ScoringParams()
    hooks = hooks or RunHooks()
    if bool(models) == (responses is not None):
        raise InputError(
            "give the models to generate answers with (--model), or existing answers "
            "(--responses), not both"
        )
    if not judges:
        raise InputError("give at least one --judge")
    dataset = load_dataset(dataset_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(
        out_dir / "run.json", _run_config(dataset, models, responses, setting, judges, params)
    )
    answers = out_dir / "responses.jsonl"
    if responses is not None:
        _copy_responses(responses, answers, setting, set(dataset.by_id()))
    else:
        from gamut_eval.generate import generate_responses

        generate_responses(
            dataset.path,
            models,
            setting,
            out_dir / "logs",
            answers,
            max_connections=max_connections,
        )
    reports = _judge_all(dataset, answers, judges, out_dir, hooks)
    return RunResult(out_dir, _score(dataset, out_dir, params), reports)


def _judge_all(
    dataset: Dataset, answers: Path, judges: Sequence[JudgeSettings], out_dir: Path, hooks: RunHooks
) -> dict[str, JudgeReport]:
    reports: dict[str, JudgeReport] = {}
    # Validates the answers once for every judge, before a store is created or locked.
    total = count_checks(dataset, answers)
    with VerdictStore(out_dir / "store.sqlite") as store:
        for settings in judges:
            name = settings.judge
            hooks.judge_start(name, total)
            stats = judge_into_store(
                dataset,
                answers,
                settings,
                store,
                on_progress=partial(hooks.judge_progress, name),
                total=total,
            )
            hooks.judge_done(name, stats)
            reports[name] = JudgeReport(stats, 0, 0)
        with atomic_writer(out_dir / "verdicts.jsonl") as handle:
            for settings in judges:
                count, unscored = write_verdict_rows(
                    verdict_rows(dataset, answers, settings, store), handle
                )
                reports[settings.judge] = JudgeReport(
                    reports[settings.judge].stats, count, unscored
                )
    failures = []
    for settings in judges:
        try:
            check_unscored_rate(reports[settings.judge], settings)
        except UnscoredRateExceeded as exc:
            failures.append(str(exc))
    if failures:
        (out_dir / "scores.jsonl").unlink(missing_ok=True)
        raise UnscoredRateExceeded("\n".join(failures))
    return reports


def _score(dataset: Dataset, out_dir: Path, params: ScoringParams) -> pd.DataFrame:
    verdicts = pd.read_json(out_dir / "verdicts.jsonl", lines=True, dtype=False)
    verdicts = verdicts[["question_id", "model", "setting", "judge", "check_id", "verdict"]]
    scores = score_table(verdicts, dataset.checklists(), params)
    with atomic_writer(out_dir / "scores.jsonl") as handle:
        for row in score_rows(scores):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = summarise_scores(scores)
    _write_json(out_dir / "summary.json", _records(summary))
    return summary
