"""Stages ``evidence`` and ``draft``: snippets with sources, grounded and repaired rubrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from construct_helpers import Call, Responder, accepted, read_jsonl, seed

from gamut_eval.construct import (
    BuildSession,
    BuildSettings,
    LocalSearch,
    ModelSettings,
    run_draft,
    run_evidence,
)
from gamut_eval.construct._llm import rubric_items_schema
from gamut_eval.rubric import compile_rubric, validate_meta_rubric

IDENTITY = {
    "id": "identity",
    "type": "fact",
    "tier": "answer_critical",
    "statement": "Identifies the dish as bibimbap.",
    "cites": ["s1"],
}


def _toppings(min_required: int, cites: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": "toppings",
        "type": "flexible_list",
        "tier": "valuable",
        "name": "common toppings",
        "options": ["beef", "fried egg", "tofu"],
        "min_required": min_required,
        "cites": ["s1"] if cites is None else cites,
    }


async def _evidence(manifest: Path, workdir: Path, corpus: Path, qids: tuple[str, ...]) -> None:
    image = manifest.parent / "bowl.png"
    questions = [accepted(image, q, question=f"What is this dish ({q})?") for q in qids]
    seed(workdir, "accepted", questions)
    async with BuildSession(workdir) as session:  # no model: default queries, no calls
        await run_evidence(session, LocalSearch(corpus))


async def test_evidence_keeps_sources_and_titles(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    seed(workdir, "accepted", [accepted(manifest.parent / "bowl.png")])
    responder = Responder()
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_evidence(session, LocalSearch(corpus))

    assert report.failed == 0
    [record] = read_jsonl(workdir / "evidence" / "evidence.jsonl")
    assert record["queries"] == ["Bibimbap toppings", "Bibimbap stone bowl variant"]
    snippets = record["snippets"]
    assert [s["id"] for s in snippets] == [f"s{i}" for i in range(1, len(snippets) + 1)]
    assert len({s["text"] for s in snippets}) == len(snippets)  # de-duplicated
    toppings = next(s for s in snippets if s["text"].startswith("Common toppings"))
    assert toppings["source"] == (corpus / "bibimbap.md").resolve().as_uri()
    assert (toppings["title"], toppings["provider"]) == ("Bibimbap", "local")
    assert record["provenance"]["prompt_version"] == "gamut-build-evidence-v1"
    # the entity is known, so the query planner is not shown the image
    assert [c.images for c in responder.of("queries")] == [0]


async def test_an_invalid_rubric_is_repaired_after_its_errors_are_fed_back(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    await _evidence(manifest, workdir, corpus, ("bowl",))
    bad = json.dumps({"items": [IDENTITY, _toppings(5)]})
    good = json.dumps({"items": [IDENTITY, _toppings(2)]})
    responder = Responder({"draft": [bad, good]})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_draft(session)

    assert report.failed == 0
    first, repair = responder.of("draft")
    assert first.repairs == 0
    assert repair.replies == [bad]
    assert (
        "items[1].min_required: a baseline must be between 1 and the number of options (3) "
        "[threshold-range] (found: 5)"
    ) in repair.turns[1]
    [draft] = read_jsonl(workdir / "draft" / "drafts.jsonl")
    assert draft["repairs"] == 1
    meta = validate_meta_rubric(draft["meta_rubric"])
    assert [e.id for e in meta.evidence][:1] == ["s1"]  # the evidence is ours, not the model's
    assert draft["checklist"] == json.loads(compile_rubric(meta).model_dump_json())
    assert {c["id"] for c in draft["checklist"]["checks"]} >= {"identity", "toppings/min-2"}
    assert draft["provenance"]["usage"]["calls"] == 2
    # structured output: the item types reach the provider with the request
    assert '"flexible_list"' in json.dumps(first.schema.json_schema.model_dump(exclude_none=True))
    assert set(draft["provenance"]["inputs"]) == {"question", "image", "evidence"}


async def test_every_item_must_cite_a_snippet(manifest: Path, workdir: Path, corpus: Path) -> None:
    await _evidence(manifest, workdir, corpus, ("bowl",))
    uncited = json.dumps({"items": [IDENTITY, _toppings(2, cites=[])]})
    wrong = json.dumps({"items": [IDENTITY, _toppings(2, cites=["s99"])]})
    responder = Responder({"draft": [uncited, wrong, json.dumps({"items": [IDENTITY]})]})
    async with BuildSession(workdir, responder.model()) as session:
        await run_draft(session)

    turns = [c.turns[-1] for c in responder.of("draft")[1:]]
    assert "item 'toppings' cites no snippet" in turns[0]
    assert "[cite-required]" in turns[0]
    assert "items[1].cites[0]" in turns[1]
    assert "[cite-exists]" in turns[1]


async def test_bad_output_ends_one_question_and_the_other_goes_on(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    await _evidence(manifest, workdir, corpus, ("bowl", "bowl2", "bowl3"))
    broken = {
        "bowl": "I cannot produce JSON today.",
        "bowl2": json.dumps({"items": [{"id": "x", "type": "opinion", "tier": "valuable"}]}),
    }

    def draft(call: Call) -> str:
        qid = call.data("Question")["question"].split("(")[1].rstrip(")?")
        return broken.get(qid, json.dumps({"items": [IDENTITY]}))

    responder = Responder({"draft": draft})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_draft(session)

    assert (report.done, report.failed) == (1, 2)
    errors = {e["id"]: e for e in read_jsonl(workdir / "draft" / "errors.jsonl")}
    assert errors["bowl"]["kind"] == "not-json"
    assert errors["bowl2"]["kind"] == "invalid"
    assert any("items[0].type" in d for d in errors["bowl2"]["details"])
    assert errors["bowl2"]["message"] == "the model's reply was still invalid after 2 repair(s)"
    assert errors["bowl2"]["usage"]["calls"] == 3
    assert [d["question_id"] for d in read_jsonl(workdir / "draft" / "drafts.jsonl")] == ["bowl3"]


async def test_a_rerun_makes_no_model_call(manifest: Path, workdir: Path, corpus: Path) -> None:
    await _evidence(manifest, workdir, corpus, ("bowl",))
    plain = BuildSettings(model=ModelSettings(structured_output=False))
    responder = Responder()
    async with BuildSession(workdir, responder.model(), plain) as session:
        await run_draft(session)
    assert responder.calls[0].schema is None
    idle = Responder(forbid=True)
    async with BuildSession(workdir, idle.model()) as session:
        report = await run_draft(session)
    assert idle.calls == []
    assert report.cached == 1


def test_the_structured_output_schema_keeps_the_item_types() -> None:
    schema = json.dumps(rubric_items_schema())
    assert "$ref" not in schema
    assert "$defs" not in schema
    for kind in ("fact", "strict_list", "flexible_list", "process", "relationship"):
        assert f'"enum": ["{kind}"]' in schema
