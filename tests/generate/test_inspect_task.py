"""The Inspect task and scorer: `inspect eval gamut_eval/gamut`, then `inspect score` with a
second judge, against Inspect's mockllm (scripted answers) and the fake judge server."""

from __future__ import annotations

import json
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
    # One metric per key: the mean over samples that have a value (no Context checks here).
    means = {s.name: next(iter(s.metrics.values())).value for s in log.results.scores}
    assert means["gamut"] == pytest.approx(1.0)
    assert means["answer_critical"] == pytest.approx(1.0)
    assert means["context"] != means["context"]  # NaN: nothing to score, not a zero


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
