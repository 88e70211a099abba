"""The build's text stages (draft, refine, text-only) against llama-cpp-python's server.

The server refuses ``json_schema`` (HTTP 500); the stages must fall back to the
``json_object`` form it takes, and whatever the small model writes, no broken rubric may
be stored: every stored rubric validates and compiles to its stored checklist, or the
question is recorded in the stage's ``errors.jsonl`` for people to look at.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.construct import (
    AcceptedQuestion,
    Audit,
    DraftRecord,
    Provenance,
    RefinedRecord,
    RubricDiff,
    Workdir,
)
from gamut_eval.dataset import load_dataset
from gamut_eval.rubric import compile_rubric, validate_meta_rubric

CORPUS = Path(__file__).parents[1] / "construct" / "corpus"
JUDGE = "openai-api/llama/smollm2"
"""The served model as users name it (conftest.JUDGE; not imported: tests/construct has a
conftest module of its own, and whichever is imported first would win)."""
MODEL = ["--model", JUDGE, "--max-tokens", "300", "--max-repairs", "1", "--max-concurrency", "2"]
QIDS = ("bowl", "plate")


def _accepted(image: Path) -> list[AcceptedQuestion]:
    provenance = Provenance(stage="review", model=None, prompt_version=None, inputs={}, key="k")
    return [
        AcceptedQuestion(
            id=qid,
            image_id=qid,
            image=str(image),
            image_sha256="0" * 64,
            question=f"What is this dish ({qid}) and what goes on it?",
            candidate_id=f"{qid}-c1",
            entity="Bibimbap",
            domain="food",
            provenance=provenance,
        )
        for qid in QIDS
    ]


def _rubric(qid: str) -> Any:
    source = (CORPUS / "bibimbap.md").resolve().as_uri()
    text = "Bibimbap is a Korean rice dish."
    return validate_meta_rubric(
        {
            "id": qid,
            "question": f"What is this dish ({qid}) and what goes on it?",
            "entity": "Bibimbap",
            "evidence": [{"id": "s1", "text": text, "source": source, "title": "Bibimbap"}],
            "items": [
                {
                    "id": "identity",
                    "type": "fact",
                    "tier": "answer_critical",
                    "statement": "Identifies the dish as bibimbap.",
                    "cites": ["s1"],
                }
            ],
        }
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _build(*argv: str) -> str:
    result = CliRunner().invoke(cli, ["build", *argv])
    # 0: every question done; 1: some are recorded in errors.jsonl; never a crash
    assert result.exit_code in (0, 1), result.output
    return result.output


def assert_stored_or_marked(workdir: Path, stage: str, name: str) -> None:
    """Every stored rubric validates and compiles to its checklist; every question is
    either stored or has a recorded error."""
    stored = _rows(workdir / stage / name)
    for row in stored:
        meta = validate_meta_rubric(row["meta_rubric"])
        assert compile_rubric(meta).model_dump(mode="json") == row["checklist"]
    errors = _rows(workdir / stage / "errors.jsonl")
    for error in errors:
        assert error["kind"], error
        assert error["message"], error
    done = {r["question_id"] for r in stored} | {e["id"] for e in errors}
    assert done == set(QIDS), (stored, errors)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    image = tmp_path / "bowl.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    root = tmp_path / "build"
    Workdir(root).write("accepted", _accepted(image))
    return root


def test_draft_on_llama_cpp_stores_only_valid_rubrics(llama_env: str, workdir: Path) -> None:
    _build("evidence", "--workdir", str(workdir), "--corpus", str(CORPUS), "--per-query", "2")
    assert len(_rows(workdir / "evidence" / "evidence.jsonl")) == len(QIDS)
    output = _build("draft", "--workdir", str(workdir), *MODEL)
    assert "draft:" in output
    usage = json.loads((workdir / "draft" / "usage.json").read_text())
    assert usage["fresh"]["calls"] >= len(QIDS)  # the model answered (no call failed at once)
    errors = _rows(workdir / "draft" / "errors.jsonl")
    assert all(e["kind"] != "model-call" for e in errors), errors  # json_object was taken
    assert_stored_or_marked(workdir, "draft", "drafts.jsonl")


def test_refine_and_text_only_on_llama_cpp_store_only_valid_rubrics(
    llama_env: str, workdir: Path
) -> None:
    store = Workdir(workdir)
    accepted = store.read("accepted", AcceptedQuestion, missing_hint="")
    drafts = [
        DraftRecord(
            question_id=q.id,
            meta_rubric=_rubric(q.id),
            checklist=compile_rubric(_rubric(q.id)),
            provenance=q.provenance,
        )
        for q in accepted
    ]
    store.write("drafts", drafts)
    research = ["--corpus", str(CORPUS), "--per-query", "1", "--max-queries", "2"]
    _build("refine", "--workdir", str(workdir), *research, *MODEL)
    errors = _rows(workdir / "refine" / "errors.jsonl")
    assert all(e["kind"] != "model-call" for e in errors), errors
    assert_stored_or_marked(workdir, "refine", "refined.jsonl")

    # text-only over refined rubrics (seeded where the model's refinement was marked)
    refined = {r["question_id"] for r in _rows(workdir / "refine" / "refined.jsonl")}
    seeded = [
        RefinedRecord(
            question_id=d.question_id,
            meta_rubric=d.meta_rubric,
            checklist=d.checklist,
            audit=Audit(snippets=()),
            queries=(),
            new_snippets=(),
            diff=RubricDiff(items=(), checks=()),
            provenance=d.provenance,
        )
        for d in drafts
        if d.question_id not in refined
    ]
    kept = store.read_optional("refined", RefinedRecord)
    store.write("refined", [*kept, *seeded])
    _build("text-only", "--workdir", str(workdir), *MODEL)
    written = _rows(workdir / "text-only" / "text_only.jsonl")
    marked = {e["id"] for e in _rows(workdir / "text-only" / "errors.jsonl")}
    assert {r["question_id"] for r in written} | marked == set(QIDS)
    for row in written:  # a stored rewrite names the entity
        assert "bibimbap" in row["question_text_only"].lower()
    # the dataset holds every refined question; those whose rewrite was marked go without
    records = {r.id: r for r in load_dataset(workdir / "dataset.jsonl").records}
    assert set(records) == set(QIDS)
    without = {qid for qid, r in records.items() if r.question_text_only is None}
    assert without == marked
