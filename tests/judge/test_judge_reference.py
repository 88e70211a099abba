"""The reference judge (``gamut/reference``): the sample's reference labels through the judge
pass, replayed only for the content they were written for."""

from __future__ import annotations

import json
from pathlib import Path

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import REFERENCE_JUDGE, JudgeSettings, judge_responses
from gamut_eval.judge._builtin import MEETS_AT, NO_LABEL, keyed_judge
from gamut_eval.judge._registry import OFFLINE_JUDGE
from gamut_eval.judge._resolve import resolve_judge

SAMPLE = sample_dir()


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _judge(tmp_path: Path, responses: Path) -> list[dict[str, object]]:
    settings = JudgeSettings(judge=REFERENCE_JUDGE)
    out = tmp_path / "verdicts.jsonl"
    dataset = load_dataset(SAMPLE / "dataset.jsonl")
    judge_responses(dataset, responses, settings, tmp_path / "store.sqlite", out)
    return _jsonl(out)


def test_the_reference_judge_is_chosen_by_its_name() -> None:
    assert resolve_judge(JudgeSettings(judge=REFERENCE_JUDGE)).backend == "reference"
    assert (
        resolve_judge(JudgeSettings(judge=REFERENCE_JUDGE, backend="fast")).backend == "reference"
    )
    assert resolve_judge(JudgeSettings(judge="openai/gpt-4.1")).backend == "fast"


def test_it_replays_every_label_of_the_sample(tmp_path: Path) -> None:
    rows = _judge(tmp_path, SAMPLE / "responses.jsonl")
    got = {(r["question_id"], r["model"], r["setting"], r["check_id"]): r["verdict"] for r in rows}
    labels = {
        (g["question_id"], g["model"], g["setting"], g["check_id"]): g["verdict"]
        for g in _jsonl(SAMPLE / "gold.jsonl")
    }
    assert len(got) == 1272
    assert got == labels
    assert {r["judge"] for r in rows} == {REFERENCE_JUDGE}


def test_an_answer_it_has_no_label_for_is_unscored_not_guessed(tmp_path: Path) -> None:
    answers = _jsonl(SAMPLE / "responses.jsonl")
    first = answers[0]
    changed = [{**first, "response": first["response"] + " It is also blue."}, *answers[1:]]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in changed))
    settings = JudgeSettings(judge=REFERENCE_JUDGE, max_unscored_rate=1.0)
    out = tmp_path / "verdicts.jsonl"
    dataset = load_dataset(SAMPLE / "dataset.jsonl")
    report = judge_responses(dataset, path, settings, tmp_path / "store.sqlite", out)
    rows = _jsonl(out)
    edited = [r for r in rows if (r["question_id"], r["model"], r["setting"]) ==
              (first["question_id"], first["model"], first["setting"])]  # fmt: skip
    checks = load_dataset(SAMPLE / "dataset.jsonl").checklists()[str(first["question_id"])].checks
    assert len(edited) == len(checks)
    assert {r["verdict"] for r in edited} == {None}
    assert report.unscored == len(checks)
    assert report.stats.reasons == {NO_LABEL.split(":", 1)[0]: len(checks)}
    # every other answer keeps its label
    assert sum(r["verdict"] is not None for r in rows) == 1272 - len(checks)


def test_built_in_judges_carry_their_revision_in_the_store_key() -> None:
    assert keyed_judge(OFFLINE_JUDGE).startswith("gamut/offline@")
    assert f"meets-at-{MEETS_AT}" in keyed_judge(OFFLINE_JUDGE)
    assert keyed_judge(REFERENCE_JUDGE).startswith("gamut/reference@labels-")
    assert keyed_judge("openai/gpt-4.1") == "openai/gpt-4.1"
