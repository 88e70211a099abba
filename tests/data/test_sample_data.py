"""The bundled sample benchmark: complete, valid, consistent with its sources, and the
offline judge's agreement with the gold verdicts is what the README says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from gamut_eval import load_dataset, score_table, summarise_scores
from gamut_eval.analysis import accuracy, cohen_kappa
from gamut_eval.data import sample_dir
from gamut_eval.judge._offline import grade_check
from gamut_eval.responses import check_responses

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = {"sample/thorough", "sample/brief", "sample/confused"}


def _jsonl(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (sample_dir() / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def dataset():  # type: ignore[no-untyped-def]
    return load_dataset(sample_dir() / "dataset.jsonl")


def test_sample_covers_the_papers_domains_with_images(dataset) -> None:  # type: ignore[no-untyped-def]
    assert len(dataset) >= 12
    assert len({r.domain for r in dataset}) >= 6
    assert {r.popularity for r in dataset} == {"head", "torso", "tail"}
    for record in dataset:
        image = dataset.image_path(record)
        assert image is not None
        assert image.is_file()
        assert image.stat().st_size > 1000
        assert record.entity
        assert record.question_text_only
        assert record.metadata["image_credit"]


def test_questions_refer_to_the_entity_only_through_the_image(dataset) -> None:  # type: ignore[no-untyped-def]
    """A proxy for the stranger test: the entity's name is absent from the question and
    present in the text-only version."""
    for record in dataset:
        name = record.entity.lower()
        assert name not in record.question.lower(), record.id
        words = [w for w in re.findall(r"[a-z']+", name) if len(w) > 3]
        assert any(w in record.question_text_only.lower() for w in words), record.id


def test_answers_of_three_systems_in_both_settings(dataset) -> None:  # type: ignore[no-untyped-def]
    counts = check_responses(sample_dir() / "responses.jsonl", set(dataset.by_id()))
    assert set(counts) == set(dataset.by_id())
    assert set(counts.values()) == {6}
    rows = _jsonl("responses.jsonl")
    assert {r["model"] for r in rows} == SYSTEMS
    assert all(r["metadata"]["illustrative"] is True for r in rows)  # type: ignore[index]


def test_gold_covers_every_answer_and_check_exactly_once(dataset) -> None:  # type: ignore[no-untyped-def]
    checklists = dataset.checklists()
    gold = _jsonl("gold.jsonl")
    seen = Counter((g["question_id"], g["model"], g["setting"], g["check_id"]) for g in gold)
    assert max(seen.values()) == 1
    expected = {
        (qid, model, setting, check.id)
        for qid, checklist in checklists.items()
        for model in SYSTEMS
        for setting in ("multimodal", "text_only")
        for check in checklist.checks
    }
    assert set(seen) == expected
    assert {g["verdict"] for g in gold} <= {"meets", "partially_meets", "missing", "contradicts"}


def test_built_files_match_their_sources() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_sample.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_gold_scores_rank_the_systems_and_show_the_modality_gap(dataset) -> None:  # type: ignore[no-untyped-def]
    gold = pd.DataFrame(_jsonl("gold.jsonl"))
    summary = summarise_scores(score_table(gold, dataset.checklists())).set_index(
        ["model", "setting"]
    )
    for setting in ("multimodal", "text_only"):
        scores = summary.xs(setting, level="setting")["gamut"]
        assert scores["sample/thorough"] > scores["sample/brief"] > scores["sample/confused"]
    confused = summary.xs("sample/confused", level="model")["gamut"]
    assert confused["text_only"] > confused["multimodal"]


def _offline_agreement(dataset) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    checks = {(qid, c.id): c for qid, cl in dataset.checklists().items() for c in cl.checks}
    answers = {
        (r["question_id"], r["model"], r["setting"]): r["response"]
        for r in _jsonl("responses.jsonl")
    }
    gold = _jsonl("gold.jsonl")
    human = [g["verdict"] for g in gold]
    offline = [
        grade_check(
            answers[(g["question_id"], g["model"], g["setting"])],
            checks[(g["question_id"], g["check_id"])],
        )[0]
        for g in gold
    ]
    return accuracy(human, offline), cohen_kappa(human, offline)


def test_readme_states_the_offline_judges_agreement(dataset) -> None:  # type: ignore[no-untyped-def]
    acc, kappa = _offline_agreement(dataset)
    readme = (ROOT / "README.md").read_text()
    match = re.search(
        r"agrees with the gold verdicts on ([\d.]+)% of checks \(Cohen's kappa ([\d.]+)\)", readme
    )
    assert match, "README must state the offline judge's agreement"
    assert float(match.group(1)) == pytest.approx(100 * acc, abs=0.05)
    assert float(match.group(2)) == pytest.approx(kappa, abs=0.005)
