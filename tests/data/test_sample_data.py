"""The bundled sample benchmark: complete, valid, consistent with its sources; the offline
judge's threshold is fitted on the tuning half of its reference labels, and its agreement
on the held-out half is what docs/sample.md says."""

from __future__ import annotations

import dataclasses
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
from gamut_eval.data import TUNING_QUESTIONS, label_part, sample_dir
from gamut_eval.judge import MEETS_AT, grade_check
from gamut_eval.quality import fit_meets_at, offline_agreement, sample_labels
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


def _labelled(dataset):  # type: ignore[no-untyped-def]
    """(question id, answer, check, reference label) for every label of the sample."""
    checks = {(qid, c.id): c for qid, cl in dataset.checklists().items() for c in cl.checks}
    answers = {
        (r["question_id"], r["model"], r["setting"]): r["response"]
        for r in _jsonl("responses.jsonl")
    }
    return [
        (
            g["question_id"],
            answers[(g["question_id"], g["model"], g["setting"])],
            checks[(g["question_id"], g["check_id"])],
            g["verdict"],
        )
        for g in _jsonl("gold.jsonl")
    ]


def _halves(dataset) -> tuple[set[str], set[str]]:  # type: ignore[no-untyped-def]
    """The split as documented: every other question in id order is tuning, from the first."""
    ids = sorted(r.id for r in dataset)
    return set(ids[0::2]), set(ids[1::2])


def _agreement(rows, meets_at: float = MEETS_AT) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    labels = [label for _, _, _, label in rows]
    graded = [grade_check(answer, check, meets_at=meets_at)[0] for _, answer, check, _ in rows]
    return accuracy(labels, graded), cohen_kappa(labels, graded)


def test_the_split_is_every_other_question_and_the_code_says_so(dataset) -> None:  # type: ignore[no-untyped-def]
    tuning, held_out = _halves(dataset)
    assert tuning == TUNING_QUESTIONS
    assert len(tuning) == len(held_out) == 6
    assert {label_part(q) for q in held_out} == {"held_out"}
    assert {label_part(q) for q in tuning} == {"tuning"}


def test_the_threshold_is_the_best_kappa_on_the_tuning_half_only(dataset) -> None:  # type: ignore[no-untyped-def]
    tuning, _ = _halves(dataset)
    rows = [r for r in _labelled(dataset) if r[0] in tuning]
    grid = [0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80]
    kappas = {t: _agreement(rows, t)[1] for t in grid}
    assert max(kappas, key=lambda t: kappas[t]) == MEETS_AT
    best, fitted = fit_meets_at()
    assert best == MEETS_AT
    assert fitted == pytest.approx(kappas)


def test_the_fit_never_reads_held_out_labels(dataset) -> None:  # type: ignore[no-untyped-def]
    """Flip every held-out label to "contradicts": the fit does not move."""
    _, held_out = _halves(dataset)
    labelled = sample_labels()
    flipped = [
        dataclasses.replace(r, label="contradicts") if r.question_id in held_out else r
        for r in labelled
    ]
    assert fit_meets_at(flipped) == fit_meets_at(labelled)


def test_readme_states_the_offline_judges_held_out_agreement(dataset) -> None:  # type: ignore[no-untyped-def]
    tuning, held_out = _halves(dataset)
    rows = _labelled(dataset)
    held = _agreement([r for r in rows if r[0] in held_out])
    tuned = _agreement([r for r in rows if r[0] in tuning])
    readme = " ".join((ROOT / "docs" / "sample.md").read_text().split())
    match = re.search(
        r"on the other six, held out, it agrees with the reference labels on ([\d.]+)% of "
        r"checks \(Cohen's kappa ([\d.]+)\), and on the tuning half on ([\d.]+)% \(kappa "
        r"([\d.]+)\)",
        readme,
    )
    assert match, "docs/sample.md must state the offline judge's agreement on the held-out half"
    assert float(match.group(1)) == pytest.approx(100 * held[0], abs=0.05)
    assert float(match.group(2)) == pytest.approx(held[1], abs=0.0005)
    assert float(match.group(3)) == pytest.approx(100 * tuned[0], abs=0.05)
    assert float(match.group(4)) == pytest.approx(tuned[1], abs=0.0005)
    parts = offline_agreement()
    assert parts["held_out"].checks == sum(r[0] in held_out for r in rows)
    assert parts["held_out"].accuracy == pytest.approx(held[0])


def test_readme_states_what_the_offline_judge_misses(dataset) -> None:  # type: ignore[no-untyped-def]
    rows = [r for r in _labelled(dataset) if r[3] == "contradicts"]
    graded = [grade_check(answer, check)[0] for _, answer, check, _ in rows]
    readme = " ".join((ROOT / "docs" / "sample.md").read_text().split())
    expected = (
        f"of the {len(rows)} checks the reference labels mark contradicts it finds "
        f"{'none' if 'contradicts' not in graded else graded.count('contradicts')} "
        f"(and gives {graded.count('meets')} of them full credit)"
    )
    assert expected in readme
