"""The Inspect task and scorer: `inspect eval gamut_eval/gamut`, then `inspect score` with a
second judge, against Inspect's mockllm (scripted answers) and the fake judge server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from generate_helpers import Recorder
from inspect_ai import eval as inspect_eval, score as inspect_score
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from gamut_eval import load_dataset
from gamut_eval._inspect_entry import gamut_scorer
from gamut_eval.judge import grade_check
from gamut_eval.testing import FakeOpenAIServer

ANSWER = "It is a red square; the materials are red paint and canvas."


def _mockllm() -> Any:
    # Scripted outputs carry usage, or mockllm would fetch a tokenizer from the network.
    output = ModelOutput.from_content(model="mockllm/model", content=ANSWER)
    output.usage = ModelUsage(input_tokens=10, output_tokens=12, total_tokens=22)
    return get_model("mockllm/model", custom_outputs=[output] * 4, memoize=False)


def _run(dataset: Path, tmp_path: Path, setting: str) -> Any:
    [log] = inspect_eval(
        "gamut_eval/gamut",  # resolved through the package's inspect_ai entry point
        model=_mockllm(),
        task_args={"dataset": str(dataset), "judge": "gamut/offline", "setting": setting},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    return log


def test_task_scores_every_check_with_the_offline_judge(dataset: Path, tmp_path: Path) -> None:
    log = _run(dataset, tmp_path, "text_only")
    checklist = load_dataset(dataset).checklists()["q-1"]
    sample = next(s for s in log.samples if s.id == "q-1")
    assert sample.metadata["setting"] == "text_only"
    score = sample.scores["gamut_scorer"]
    verdicts = score.metadata["verdicts"]
    assert set(verdicts) == {c.id for c in checklist.checks}
    for check in checklist.checks:
        assert verdicts[check.id] == grade_check(ANSWER, check)[0]
    # identity (AC) "Identifies the red square." is met; both materials (V) are met.
    assert score.value["gamut"] == pytest.approx(1.0)
    # Per key, Inspect's mean() and stderr() over the samples that have a value (no Context
    # checks here).
    assert {s.name: sorted(s.metrics) for s in log.results.scores} == {
        key: ["gamut_eval/mean", "gamut_eval/stderr"]
        for key in ("gamut", "answer_critical", "valuable", "context")
    }
    means = {s.name: s.metrics["gamut_eval/mean"].value for s in log.results.scores}
    errors = {s.name: s.metrics["gamut_eval/stderr"].value for s in log.results.scores}
    assert errors["gamut"] == 0.0  # both answers score 1.0
    assert means["gamut"] == pytest.approx(1.0)
    assert means["answer_critical"] == pytest.approx(1.0)
    assert means["context"] != means["context"]  # NaN: nothing to score, not a zero


def test_metrics_are_rounded_and_left_nan_free_by_hand(dataset: Path, tmp_path: Path) -> None:
    """mean and stderr over the finite values only, rounded to four places."""
    from inspect_ai.scorer import SampleScore, Score

    from gamut_eval._inspect_entry import mean, stderr

    values = [1 / 3, -0.2, float("nan"), 0.06000000000000001]
    scores = [SampleScore(score=Score(value=v), sample_id=i) for i, v in enumerate(values)]
    # finite: 1/3, -0.2, 0.06; mean = 0.19333.../3 = 0.064444...
    assert mean()(scores) == 0.0644
    # deviations 0.268889, -0.264444, -0.004444; squares sum 0.142... / 2 = 0.0711...;
    # sqrt(0.0711/3) = 0.15397
    finite = [1 / 3, -0.2, 0.06]
    m = sum(finite) / 3
    by_hand = (sum((v - m) ** 2 for v in finite) / 2 / 3) ** 0.5
    assert stderr()(scores) == round(by_hand, 4) == 0.154
    nothing = [SampleScore(score=Score(value=float("nan")), sample_id=0)]
    assert mean()(nothing) != mean()(nothing)  # NaN, not zero


def test_a_task_without_a_judge_says_how_to_score(
    dataset: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from gamut_eval._inspect_entry import gamut
    from gamut_eval.generate import gamut_task

    with caplog.at_level("WARNING"):
        task = gamut(dataset=str(dataset))
    assert not task.scorer
    assert "-T judge=MODEL" in caplog.text
    assert "inspect score LOG --scorer gamut_eval/gamut_scorer" in caplog.text
    assert f"-S dataset={dataset}" in caplog.text
    assert task.metadata["gamut_dataset"] == os.path.relpath(dataset)  # not an absolute path
    caplog.clear()
    with caplog.at_level("WARNING"):
        gamut(dataset=str(dataset), judge="gamut/offline")
        gamut_task(dataset=str(dataset))  # gamut run / generate: they score the answers
    assert "no judge" not in caplog.text


def test_inspect_score_rescores_a_log_with_a_second_judge(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    log = _run(dataset, tmp_path, "multimodal")
    server_judge = "openai-api/fake/second-judge"

    recorder.judge_reply = json.dumps({"explanation": "wrong", "verdict": "contradicts"})
    rescored = inspect_score(
        log, scorers=[gamut_scorer(judge=server_judge, dataset=str(dataset))], display="none"
    )
    sample = next(s for s in rescored.samples if s.id == "q-2")
    second = [
        s for name, s in sample.scores.items() if s.metadata and s.metadata["judge"] == server_judge
    ]
    assert len(second) == 1
    assert second[0].value["gamut"] == pytest.approx(-1.0)
    assert set(second[0].metadata["verdicts"].values()) == {"contradicts"}
    assert second[0].metadata["contradicts"] == second[0].metadata["checks"]
    for check_id in second[0].metadata["verdicts"]:
        assert f"- `{check_id}` (" in second[0].explanation
    assert second[0].explanation.count("**contradicts**") == second[0].metadata["checks"]
    # One judge request per check of each answer, each check independently.
    checks = sum(len(c.checks) for c in load_dataset(dataset).checklists().values())
    assert len(recorder.judge_requests()) == checks
