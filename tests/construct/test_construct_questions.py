"""Stage ``questions`` with Inspect's mockllm: candidates, repairs, errors, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from construct_helpers import RED_PNG, Call, Responder, read_jsonl
from inspect_ai.model import ModelOutput, ModelUsage

from gamut_eval.construct import BuildSession, load_images, run_questions
from gamut_eval.construct._prompts import QUESTIONS_VERSION
from gamut_eval.errors import InputError, ValidationError
from gamut_eval.prices import PriceTable


async def test_candidates_per_image_with_provenance_and_usage(
    manifest: Path, workdir: Path
) -> None:
    responder = Responder()
    prices = PriceTable.model_validate({"mockllm/model": {"input": 1.0, "output": 10.0}})
    async with BuildSession(workdir, responder.model(), prices=prices) as session:
        report = await run_questions(session, manifest, per_image=3)

    assert (report.units, report.done, report.failed, report.cached) == (2, 2, 0, 0)
    # each image was sent as an image, with the manifest's entity kept out of the questions
    calls = responder.of("questions")
    assert [c.images for c in calls] == [1, 1]
    assert any("Bibimbap" in c.user for c in calls)
    rows = read_jsonl(workdir / "questions" / "candidates.jsonl")
    assert [r["id"] for r in rows] == [f"{i}-c{n}" for i in ("bowl", "tower") for n in (1, 2, 3)]
    provenance = rows[0]["provenance"]
    image_hash = load_images(manifest)[0].sha256
    assert provenance["model"] == "mockllm/model"
    assert provenance["prompt_version"] == QUESTIONS_VERSION
    assert provenance["inputs"]["image"] == image_hash
    assert provenance["usage"] == {
        "calls": 1,
        "input": 100,
        "cached_input": 0,
        "cache_write_input": 0,
        "output": 20,
        "reasoning": 0,
        "cost": None,
        "priced_as": None,
    }
    usage = json.loads((workdir / "questions" / "usage.json").read_text())
    assert usage["fresh"]["calls"] == 2
    assert usage["cost_usd"] == pytest.approx((200 * 1.0 + 40 * 10.0) / 1e6)
    images = read_jsonl(workdir / "questions" / "images.jsonl")
    assert [(i["id"], i["entity"]) for i in images] == [
        ("bowl", "Bibimbap"),
        ("tower", "Eiffel Tower"),
    ]


async def test_a_candidate_naming_the_entity_is_sent_back(manifest: Path, workdir: Path) -> None:
    naming = json.dumps({"candidates": [{"question": "How is bibimbap made?", "aspect": "x"}]})
    fixed = json.dumps({"candidates": [{"question": "How is this dish made?", "aspect": "x"}]})
    responder = Responder({"questions": lambda call: fixed if call.repairs else naming})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_questions(session, manifest, per_image=1)

    assert report.failed == 0
    repaired = [c for c in responder.of("questions") if c.repairs]
    # only the bowl's candidate names its entity; the tower's does not name "Eiffel Tower"
    assert len(repaired) == 1
    assert "names the entity ('Bibimbap')" in repaired[0].turns[1]
    assert repaired[0].replies == [naming]


async def test_bad_output_fails_one_image_and_the_other_goes_on(
    manifest: Path, workdir: Path
) -> None:
    def questions(call: Call) -> str:
        if "Bibimbap" in call.user:
            return "Sure! Here are some great questions about this dish."
        return json.dumps({"candidates": [{"question": "What is this tower?", "aspect": "x"}]})

    responder = Responder({"questions": questions})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_questions(session, manifest, per_image=1)

    assert (report.done, report.failed) == (1, 1)
    # first try and two repairs, each told what was wrong
    bowl = [c for c in responder.of("questions") if "Bibimbap" in c.user]
    assert [c.repairs for c in bowl] == [0, 1, 2]
    assert "not valid JSON" in bowl[-1].turns[1]
    [error] = read_jsonl(workdir / "questions" / "errors.jsonl")
    assert (error["id"], error["stage"], error["kind"]) == ("bowl", "questions", "not-json")
    assert error["usage"]["calls"] == 3
    rows = read_jsonl(workdir / "questions" / "candidates.jsonl")
    assert [r["image_id"] for r in rows] == ["tower"]
    usage = json.loads((workdir / "questions" / "usage.json").read_text())
    assert usage["fresh"]["calls"] == 4  # failed attempts are paid for, and counted


async def test_resume_makes_no_model_call_and_new_images_only_cost_their_own(
    manifest: Path, workdir: Path
) -> None:
    async with BuildSession(workdir, Responder().model()) as session:
        await run_questions(session, manifest, per_image=2)
    first = (workdir / "questions" / "candidates.jsonl").read_text()

    idle = Responder(forbid=True)
    async with BuildSession(workdir, idle.model()) as session:
        report = await run_questions(session, manifest, per_image=2)
    assert idle.calls == []
    assert (report.done, report.cached) == (2, 2)
    assert report.usage.fresh.calls == 0
    assert report.usage.cached.calls == 2
    assert (workdir / "questions" / "candidates.jsonl").read_text() == first

    (manifest.parent / "third.png").write_bytes(RED_PNG + b"\x00")
    with manifest.open("a") as handle:
        handle.write(json.dumps({"image": "third.png", "entity": "Monstera"}) + "\n")
    more = Responder()
    async with BuildSession(workdir, more.model()) as session:
        report = await run_questions(session, manifest, per_image=2)
    assert len(more.calls) == 1
    assert report.cached == 2


async def test_a_folder_of_images_needs_no_manifest(manifest: Path, workdir: Path) -> None:
    records = load_images(manifest.parent)
    assert [(r.id, r.entity) for r in records] == [("bowl", None), ("tower", None)]
    responder = Responder()
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_questions(session, manifest.parent, per_image=1)
    assert report.done == 2
    assert all("The entity is" not in c.user for c in responder.calls)


def test_bad_manifests_are_reported_with_their_lines(tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(
        json.dumps({"image": "missing.png"})
        + "\n"
        + json.dumps({"image": "x.png", "popularity": "famous", "colour": "red"})
        + "\n"
    )
    with pytest.raises(ValidationError) as info:
        load_images(manifest)
    text = str(info.value)
    assert "m.jsonl:1" in text
    assert "no such image file" in text
    assert "m.jsonl:2:popularity" in text
    assert "m.jsonl:2:colour" in text
    with pytest.raises(InputError, match="no such folder or manifest"):
        load_images(tmp_path / "nowhere")


async def test_questions_need_a_model(manifest: Path, workdir: Path) -> None:
    async with BuildSession(workdir) as session:
        with pytest.raises(InputError, match="needs a model"):
            await run_questions(session, manifest)


async def test_failed_and_truncated_calls_are_recorded_per_image(
    manifest: Path, workdir: Path
) -> None:
    def questions(call: Call) -> str | ModelOutput:
        if "Bibimbap" in call.user:
            raise RuntimeError("provider exploded")
        output = ModelOutput.from_content("mockllm/model", '{"candidates": [', "max_tokens")
        output.usage = ModelUsage(input_tokens=10, output_tokens=8192, total_tokens=8202)
        return output

    responder = Responder({"questions": questions})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_questions(session, manifest, per_image=1)

    errors = {e.id: e for e in report.errors}
    assert errors["bowl"].kind == "model-call"
    assert "RuntimeError: provider exploded" in errors["bowl"].message
    assert errors["tower"].kind == "truncated"
    assert "raise max_tokens" in errors["tower"].message
    assert errors["tower"].setting == "max_tokens"  # the command line adds its option
    assert len(responder.of("questions")) == 2  # neither is repaired: it cannot help
