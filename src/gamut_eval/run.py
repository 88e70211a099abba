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
from pathlib import Path
from typing import Any

import pandas as pd

from gamut_eval import __version__
from gamut_eval._files import atomic_writer, read_jsonl
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.judge._pass import OnEvent, judge_pass
from gamut_eval.judge._plan import JudgePlan
from gamut_eval.judge._prompt import PROMPT_VERSION
from gamut_eval.judge._run import (
    JudgeReport,
    UnscoredRateExceeded,
    check_unscored_rate,
    verdict_rows,
    write_verdict_rows,
)
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import VerdictStore
from gamut_eval.judge.backends import make_backend
from gamut_eval.records import RunManifest, score_rows
from gamut_eval.responses import check_responses
from gamut_eval.scoring import ScoringParams, score_table, summarise_scores

__all__ = ["RunResult", "run_benchmark", "score_rows"]


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


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {str(k): (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]


def _write_json(path: Path, data: Any) -> None:
    with atomic_writer(path) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def _manifest(
    dataset: Dataset,
    models: Sequence[str],
    responses: Path | None,
    setting: str,
    judges: Sequence[JudgeSettings],
    params: ScoringParams,
) -> RunManifest:
    return RunManifest(
        gamut_eval_version=__version__,
        python=platform.python_version(),
        started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        dataset=str(dataset.path),
        questions=len(dataset),
        models=list(models),
        responses_from=str(responses) if responses else "generated",
        setting=setting,
        prompt_version=PROMPT_VERSION,
        judges=[j.model_dump(mode="json") for j in judges],
        scoring=params,
    )


def run_benchmark(
    dataset_path: Path,
    out_dir: Path,
    judges: Sequence[JudgeSettings],
    *,
    models: Sequence[str] = (),
    responses: Path | None = None,
    setting: str = "both",
    params: ScoringParams | None = None,
    on_event: OnEvent | None = None,
    max_connections: int | None = None,
    wait_for_store_s: float = 0.0,
) -> RunResult:
    """Generate (or take) answers, judge them with every judge, score, write RUN_DIR."""
    params = params or ScoringParams()
    if bool(models) == (responses is not None):
        raise InputError(
            "give the models to generate answers with (--model), or existing answers "
            "(--responses), not both"
        )
    if not judges:
        raise InputError("give at least one --judge")
    dataset = load_dataset(dataset_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(dataset, models, responses, setting, judges, params)
    _write_json(out_dir / "run.json", manifest.model_dump(mode="json"))
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
    reports = _judge_all(dataset, answers, judges, out_dir, on_event, wait_for_store_s)
    return RunResult(out_dir, _score(dataset, out_dir, params), reports)


def _judge_all(
    dataset: Dataset,
    answers: Path,
    judges: Sequence[JudgeSettings],
    out_dir: Path,
    on_event: OnEvent | None,
    wait_s: float,
) -> dict[str, JudgeReport]:
    # The answers are validated once, for every judge, before the store is created or locked.
    plan = JudgePlan(dataset, answers, judges[0])
    plans = [plan.for_judge(settings) for settings in judges]
    reports: dict[str, JudgeReport] = {}
    with VerdictStore(out_dir / "store.sqlite", wait_s=wait_s) as store:
        passes = [judge_pass(p, make_backend(p.settings), store, on_event) for p in plans]
        with atomic_writer(out_dir / "verdicts.jsonl") as handle:
            for judge_plan, stats in zip(plans, passes, strict=True):
                count, unscored = write_verdict_rows(verdict_rows(judge_plan, store), handle)
                reports[judge_plan.settings.judge] = JudgeReport(stats, count, unscored)
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
