"""`gamut run` writes Inspect logs whose samples carry every judge's score, an explanation
naming each failed check with its verdict (unscored checks as unscored), and flat,
labelled metadata: read back with Inspect's own `read_eval_log`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from generate_helpers import Recorder, is_model_probe, is_probe
from inspect_ai.log import list_eval_logs, read_eval_log

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.generate._scorer import VERDICT_WORDS
from gamut_eval.testing import FakeOpenAIServer

JUDGE = "openai-api/fake/judge"


class _ByCheck(Recorder):
    """Answers as the Recorder does; the judge's verdict depends on the check alone:
    `red paint` is contradicted, `canvas` gets no readable verdict (unscored after the
    re-asks), every other check is met."""

    def __call__(self, request: dict[str, Any], ctx: object) -> str:
        self.bodies.append(request)
        if is_model_probe(request) or request["messages"][0].get("role") != "system":
            return "It is a red square painted on canvas with red paint."
        if is_probe(request):
            return json.dumps({"explanation": "ok", "verdict": "meets"})
        asked = [str(m.get("content")) for m in request["messages"] if m.get("role") == "user"]
        check = asked[0].rsplit("# Check\n", 1)[-1]  # a re-ask follows the first question
        if "canvas" in check:
            return "I cannot decide."
        verdict = "contradicts" if "red paint" in check else "meets"
        return json.dumps({"explanation": f"judged {verdict}", "verdict": verdict})


def _lines(explanation: str) -> dict[str, str]:
    """The explanation's list lines by check id (``- `id` (tier): **verdict**. ...``)."""
    return {line.split("`")[1]: line for line in explanation.splitlines() if line.startswith("- `")}


def _scores_file(out: Path) -> dict[tuple[str, str, str, str], float]:
    rows = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    return {
        (r["question_id"], r["model"], r["setting"], r["judge"]): (
            math.nan if r["gamut"] is None else r["gamut"]
        )
        for r in rows
    }


def _verdicts_file(out: Path) -> dict[tuple[str, str, str, str], dict[str, str | None]]:
    found: dict[tuple[str, str, str, str], dict[str, str | None]] = {}
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        r = json.loads(line)
        key = (r["question_id"], r["model"], r["setting"], r["judge"])
        found.setdefault(key, {})[r["check_id"]] = r["verdict"]
    return found


def _assert_labelled(metadata: dict[str, Any]) -> None:
    """Every metadata value is a scalar or a mapping of check id (or tier) to a scalar:
    nothing Inspect's viewer would fold into an unlabelled ``Object(n)`` below that."""
    for name, value in metadata.items():
        if isinstance(value, dict):
            assert all(isinstance(v, str | int | float) for v in value.values()), name
        else:
            assert isinstance(value, str | int | float), name


def _assert_sample_matches(
    score: Any, verdicts: dict[str, str | None], gamut: float, judge: str
) -> None:
    assert score.metadata["judge"] == judge
    assert score.metadata["verdicts"] == {k: v or "unscored" for k, v in verdicts.items()}
    assert score.value["gamut"] == pytest.approx(gamut, nan_ok=True)
    _assert_labelled(score.metadata)
    lines = _lines(score.explanation)
    for check_id, verdict in verdicts.items():
        if verdict == "meets":
            assert check_id not in lines  # only failed and unscored checks are listed
        elif verdict is None:
            assert "**unscored**" in lines[check_id]
        else:
            assert f"**{VERDICT_WORDS[verdict]}**" in lines[check_id]


def test_generated_run_logs_carry_each_judges_scores(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _ByCheck()
    out = tmp_path / "run"
    model = f"openai-api/fake/cand-{tmp_path.name}"  # Inspect keeps models by name
    with FakeOpenAIServer(policy=policy) as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "test-key")
        result = CliRunner().invoke(
            cli,
            ["run", "--dataset", str(dataset), "--model", model, "--judge", JUDGE,
             "--judge", "gamut/offline", "--max-unscored-rate", "1", "--out", str(out)],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    gamut, verdicts = _scores_file(out), _verdicts_file(out)
    logs = [read_eval_log(info) for info in list_eval_logs(str(out / "logs"))]
    assert sorted(log.eval.task for log in logs) == ["gamut_multimodal", "gamut_text_only"]
    for log in logs:
        assert log.status == "success"
        assert len(log.samples or []) == 2
        for sample in log.samples or []:
            # the eval set's transcript is still there, now with the scores
            assert sample.output.completion.startswith("It is a red square")
            assert set(sample.scores or {}) == {"gamut_scorer", "gamut_scorer:gamut/offline"}
            key = (str(sample.id), model, str(sample.metadata["setting"]))
            primary = sample.scores["gamut_scorer"]  # type: ignore[index]
            _assert_sample_matches(primary, verdicts[(*key, JUDGE)], gamut[(*key, JUDGE)], JUDGE)
            # By hand: AC identity met (1); V: red paint contradicts (-2 / 2 = -1), canvas
            # unscored (left out); no Context checks: (0.6 * 1 + 0.3 * -1) / 0.9 = 1/3.
            assert primary.value["gamut"] == pytest.approx(1 / 3)
            assert primary.value["valuable"] == pytest.approx(-1.0)
            assert primary.metadata["verdicts"] == {
                "identity": "meets", "parts/item-1": "contradicts", "parts/item-2": "unscored",
            }  # fmt: skip
            assert (primary.metadata["unscored"], primary.metadata["missing"]) == (1, 0)
            unscored_line = _lines(primary.explanation)["parts/item-2"]
            assert "**missing**" not in unscored_line
            assert "not counted as missing" in primary.explanation
            offline = sample.scores["gamut_scorer:gamut/offline"]  # type: ignore[index]
            offline_key = (*key, "gamut/offline")
            _assert_sample_matches(
                offline, verdicts[offline_key], gamut[offline_key], "gamut/offline"
            )
        means = {s.name: s.metrics["gamut_eval/mean"].value for s in log.results.scores}  # type: ignore[union-attr]
        assert means["gamut"] == round(1 / 3, 4)  # shown to four places
        assert means["answer_critical"] == pytest.approx(1.0)
        assert math.isnan(means["context"])  # nothing to score, not a zero


def test_given_answers_run_writes_a_scored_log_per_model_and_setting(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli,
        ["run", "--responses", str(sample_dir() / "responses.jsonl"), "--judge",
         "gamut/offline", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    gamut, verdicts = _scores_file(out), _verdicts_file(out)
    dataset = load_dataset(sample_dir() / "dataset.jsonl")
    answers = {
        (r["question_id"], r["model"], r["setting"]): r["response"]
        for r in map(json.loads, (out / "responses.jsonl").read_text().splitlines())
    }
    logs = [read_eval_log(info) for info in list_eval_logs(str(out / "logs"))]
    assert sorted((log.eval.model, log.eval.task) for log in logs) == sorted(
        (m, f"gamut_{s}")
        for m in ("sample/thorough", "sample/brief", "sample/confused")
        for s in ("multimodal", "text_only")
    )
    seen = 0
    for log in logs:
        assert log.status == "success"
        setting = log.eval.task.removeprefix("gamut_")
        for sample in log.samples or []:
            key = (str(sample.id), log.eval.model, setting)
            assert sample.output.completion == answers[key]
            score = sample.scores["gamut_scorer"]  # type: ignore[index]
            judged = (*key, "gamut/offline")
            _assert_sample_matches(score, verdicts[judged], gamut[judged], "gamut/offline")
            assert score.metadata["checks"] == len(dataset.checklists()[str(sample.id)].checks)
            # the question as the model was asked it: the image only in the multimodal setting
            images = [c for c in sample.messages[0].content if getattr(c, "type", "") == "image"]
            assert len(images) == (1 if setting == "multimodal" else 0)
            seen += 1
    assert seen == len(answers) == 72


def test_given_answers_logs_give_mean_and_stderr_and_a_reusable_dataset(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli,
        ["run", "--responses", str(sample_dir() / "responses.jsonl"), "--judge",
         "gamut/offline", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    gamut = _scores_file(out)
    logs = [read_eval_log(info) for info in list_eval_logs(str(out / "logs"))]
    assert len(logs) == 6
    for log in logs:
        assert log.eval.task_args["dataset"] == "sample"  # not this machine's path
        assert log.eval.dataset.location == "sample"
        setting = log.eval.task.removeprefix("gamut_")
        values = [g for (q, m, s, j), g in gamut.items() if m == log.eval.model and s == setting]
        assert len(values) == 12
        mean = sum(values) / 12
        by_hand = (sum((v - mean) ** 2 for v in values) / 11 / 12) ** 0.5
        [primary] = [s for s in log.results.scores if s.name == "gamut"]  # type: ignore[union-attr]
        assert primary.metrics["gamut_eval/mean"].value == round(mean, 4)
        assert primary.metrics["gamut_eval/stderr"].value == round(by_hand, 4)
