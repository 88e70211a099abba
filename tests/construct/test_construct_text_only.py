"""Stage ``text-only``: the entity named in text, checked to ask the same; the dataset."""

from __future__ import annotations

import json
from pathlib import Path

from construct_helpers import Call, Responder, accepted, read_jsonl, seed

from gamut_eval.construct import BuildSession, DraftRecord, RefinedRecord, run_text_only
from gamut_eval.construct._models import Audit, RubricDiff
from gamut_eval.dataset import load_dataset
from gamut_eval.rubric import compile_rubric, validate_meta_rubric


def _refined(qid: str) -> RefinedRecord:
    meta = validate_meta_rubric(
        {
            "id": qid,
            "question": "What is this dish and what goes on it?",
            "evidence": [{"id": "s1", "text": "Bibimbap is a Korean rice dish."}],
            "items": [
                {
                    "id": "identity",
                    "type": "fact",
                    "tier": "answer_critical",
                    "statement": "Identifies bibimbap.",
                    "cites": ["s1"],
                }
            ],
        }
    )
    return RefinedRecord(
        question_id=qid,
        meta_rubric=meta,
        checklist=compile_rubric(meta),
        audit=Audit(snippets=()),
        queries=(),
        new_snippets=(),
        diff=RubricDiff(items=(), checks=()),
        provenance=accepted(Path("x")).provenance,
    )


async def test_text_only_questions_name_the_entity_and_complete_the_dataset(
    manifest: Path, workdir: Path
) -> None:
    image = manifest.parent / "bowl.png"
    seed(workdir, "accepted", [accepted(image), accepted(image, "plain", entity=None)])
    seed(workdir, "refined", [_refined("bowl")])
    responder = Responder()
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_text_only(session)

    [record] = read_jsonl(workdir / "text-only" / "text_only.jsonl")
    assert record["question_text_only"] == "What is Bibimbap dish and what goes on it?"
    assert record["check"] == "Both ask for the same explanation."
    [check] = responder.of("same")
    assert check.data("The two versions")["text_only"] == record["question_text_only"]
    # a question without a ground-truth entity has no text-only version: recorded, not guessed
    [error] = report.errors
    assert (error.id, error.kind) == ("plain", "no-entity")
    dataset = load_dataset(workdir / "dataset.jsonl")
    [row] = dataset.records
    assert row.question_text_only == record["question_text_only"]
    # the image lay outside the build folder: the dataset holds it in its own images/
    assert dataset.image_path(row) == workdir / "images" / Path(image).name
    assert Path(str(dataset.image_path(row))).read_bytes() == Path(image).read_bytes()
    assert row.metadata["build"]["rubric"] == "k"
    assert "1 question(s) in" in report.notes[1]


async def test_a_rewrite_that_asks_something_else_is_sent_back(
    manifest: Path, workdir: Path
) -> None:
    seed(workdir, "accepted", [accepted(manifest.parent / "bowl.png")])
    drifted = json.dumps({"question_text_only": "What is the history of Bibimbap?"})
    unnamed = json.dumps({"question_text_only": "What is this Korean dish and its toppings?"})
    fixed = json.dumps({"question_text_only": "What is Bibimbap and what goes on it?"})

    def same(call: Call) -> str:
        text_only = call.data("The two versions")["text_only"]
        if "history" in text_only:
            return json.dumps({"same": False, "reason": "It asks about history, not toppings."})
        return json.dumps({"same": True, "reason": "Same request."})

    responder = Responder({"text_only": [drifted, unnamed, fixed], "same": same})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_text_only(session)

    assert report.failed == 0
    rewrites = responder.of("text_only")
    assert (
        "does not ask the same thing as the original: It asks about history" in rewrites[1].turns[1]
    )
    assert "must name the entity ('Bibimbap')" in rewrites[2].turns[2]
    [record] = read_jsonl(workdir / "text-only" / "text_only.jsonl")
    assert record["repairs"] == 2
    assert not (workdir / "dataset.jsonl").exists()  # no refined rubric yet
    assert "no question has a refined rubric yet" in report.notes[1]


def test_draft_records_round_trip() -> None:
    refined = _refined("q")
    draft = DraftRecord(
        question_id="q",
        meta_rubric=refined.meta_rubric,
        checklist=refined.checklist,
        provenance=refined.provenance,
    )
    assert DraftRecord.model_validate_json(draft.model_dump_json()) == draft
