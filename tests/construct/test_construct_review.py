"""Stage ``review``: the stranger test, human decisions, new candidates, the loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from construct_helpers import Call, Responder, read_jsonl, write_jsonl

from gamut_eval.construct import BuildSession, load_decisions, run_questions, run_review
from gamut_eval.errors import ValidationError

LEADING = "Why is the Jeonju version of this rice bowl considered the best one?"
STRANGER = "What is this dish, and how is it usually put together?"
REASON = (
    "It presupposes that the dish is bibimbap and that Jeonju is famous for it; a stranger "
    "could not know either from the photo."
)


def _questions(call: Call) -> str:
    if "Bibimbap" in call.user:
        questions = [LEADING, STRANGER]
    else:
        questions = ["What is this tower, and why was it built?", "How was this structure built?"]
    return json.dumps({"candidates": [{"question": q, "aspect": "x"} for q in questions]})


def _review(call: Call) -> str:
    candidates = call.data("Candidates")
    reviews: list[dict[str, Any]] = []
    for c in candidates:
        leading = c["question"] == LEADING
        failures = [{"requirement": "stranger_test", "reason": REASON}] if leading else []
        reviews.append(
            {
                "candidate_id": c["candidate_id"],
                "passes": not leading,
                "failures": failures,
                "boilerplate": False,
            }
        )
    passing = [r["candidate_id"] for r in reviews if r["passes"]]
    return json.dumps({"reviews": reviews, "ranking": passing[::-1], "new_candidates": []})


async def _prepare(manifest: Path, workdir: Path) -> None:
    async with BuildSession(workdir, Responder({"questions": _questions}).model()) as session:
        await run_questions(session, manifest, per_image=2)


def _states(workdir: Path) -> dict[str, dict[str, Any]]:
    return {r["candidate"]["id"]: r for r in read_jsonl(workdir / "review" / "candidates.jsonl")}


async def test_a_leading_question_fails_the_stranger_test_with_its_reason(
    manifest: Path, workdir: Path
) -> None:
    await _prepare(manifest, workdir)
    responder = Responder({"review": _review})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_review(session)

    states = _states(workdir)
    leading = states["bowl-c1"]
    assert leading["candidate"]["question"] == LEADING
    assert leading["state"] == "rejected_by_llm"
    assert leading["review"]["failures"] == [{"requirement": "stranger_test", "reason": REASON}]
    assert states["bowl-c2"]["state"] == "awaiting_human"
    # people see only what passed, with the image
    tasks = read_jsonl(workdir / "review" / "to_annotate.jsonl")
    assert {t["candidate_id"] for t in tasks} == {"bowl-c2", "tower-c1", "tower-c2"}
    assert all(Path(t["image"]).is_file() for t in tasks)
    assert read_jsonl(workdir / "review" / "accepted.jsonl") == []
    assert report.next_step is not None
    assert "rerun with every decision exported so far as decisions" in report.next_step
    assert report.next_step_settings == ("decisions",)  # the command line adds its option
    assert "to_annotate.jsonl" in report.next_step
    # the reviewer saw the image and every candidate, as fenced data
    call = responder.of("review")[0]
    assert call.images == 1
    assert "<<<DATA" in call.user


async def test_human_decisions_accept_without_a_new_model_call(
    manifest: Path, workdir: Path, tmp_path: Path
) -> None:
    await _prepare(manifest, workdir)
    async with BuildSession(workdir, Responder({"review": _review}).model()) as session:
        await run_review(session)
    decisions = write_jsonl(
        tmp_path / "decisions.jsonl",
        [
            {"candidate_id": "bowl-c2", "decision": "accept", "annotator": "ann-1"},
            {"question_id": "tower-c1", "decision": "accept"},
            {"candidate_id": "tower-c2", "decision": "accept"},
        ],
    )
    idle = Responder(forbid=True)
    async with BuildSession(workdir, idle.model()) as session:
        report = await run_review(session, [decisions])

    assert idle.calls == []  # accepting changes nothing the reviewer saw: cached
    accepted = {a["id"]: a for a in read_jsonl(workdir / "review" / "accepted.jsonl")}
    assert accepted["bowl"]["question"] == STRANGER
    # both tower candidates were accepted: the reviewer's first-ranked one is chosen
    assert accepted["tower"]["candidate_id"] == "tower-c2"
    assert accepted["bowl"]["entity"] == "Bibimbap"
    assert report.next_step is None
    assert _states(workdir)["tower-c1"]["state"] == "not_chosen"


async def test_a_revision_re_enters_and_discarding_everything_brings_new_candidates(
    manifest: Path, workdir: Path, tmp_path: Path
) -> None:
    await _prepare(manifest, workdir)
    revised = "What is this rice dish, and what usually goes on top of it?"
    decisions = write_jsonl(
        tmp_path / "decisions.jsonl",
        [
            {"candidate_id": "bowl-c2", "decision": "revise", "revised_question": revised},
            {"candidate_id": "tower-c1", "decision": "discard"},
            {"candidate_id": "tower-c2", "decision": "discard"},
        ],
    )
    new_tower = "What is this landmark, and how was it received when it was built?"

    def review(call: Call) -> str:
        if "Candidates" not in call.user:  # every tower candidate was discarded
            return json.dumps({"reviews": [], "ranking": [], "new_candidates": [new_tower]})
        return _review(call)

    responder = Responder({"review": review})
    async with BuildSession(workdir, responder.model()) as session:
        await run_review(session, [decisions])

    states = _states(workdir)
    [revision] = [s for s in states.values() if s["candidate"]["origin"] == "revised"]
    assert revision["candidate"]["parent"] == "bowl-c2"
    assert revision["state"] == "awaiting_human"
    assert states["bowl-c2"]["state"] == "revised"
    [proposal] = [s for s in states.values() if s["candidate"]["origin"] == "proposed"]
    assert proposal["candidate"]["question"] == new_tower
    assert proposal["state"] == "awaiting_human"  # proposed, reviewed in the next round, passed
    tower_calls = [c for c in responder.of("review") if "Bibimbap" not in c.user]
    assert len(tower_calls) == 2
    assert "tower-c1" not in tower_calls[0].user.split("reviewers discarded")[0]
    assert new_tower in tower_calls[1].user


async def test_only_boilerplate_requires_new_candidates_fed_back_as_an_error(
    manifest: Path, workdir: Path
) -> None:
    await _prepare(manifest, workdir)
    fresh = "What is unusual about how this was built?"

    def review(call: Call) -> str:
        candidates = call.data("Candidates")
        reviews = [
            {
                "candidate_id": c["candidate_id"],
                "passes": True,
                "failures": [],
                "boilerplate": c["question"] != fresh,
            }
            for c in candidates
        ]
        new = [fresh] if call.repairs and "Bibimbap" not in call.user else []
        ranking = [c["candidate_id"] for c in candidates]
        return json.dumps({"reviews": reviews, "ranking": ranking, "new_candidates": new})

    responder = Responder({"review": review})
    async with BuildSession(workdir, responder.model(), _settings(max_repairs=1)) as session:
        report = await run_review(session)

    repaired = [c for c in responder.of("review") if c.repairs]
    assert repaired
    assert "propose new questions in `new_candidates`" in repaired[0].turns[1]
    # the bowl's reviewer never proposes: its image ends with a recorded error
    assert [e.id for e in report.errors] == ["bowl"]
    assert report.errors[0].kind == "invalid"
    images = {i["image_id"]: i for i in read_jsonl(workdir / "review" / "images.jsonl")}
    assert images["bowl"]["status"] == "error"
    assert images["tower"]["status"] == "awaiting_human"
    waiting = [t["question"] for t in read_jsonl(workdir / "review" / "to_annotate.jsonl")]
    assert waiting[0] == fresh  # specific before boilerplate


def test_decisions_are_validated_and_later_rows_win(tmp_path: Path) -> None:
    good = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"candidate_id": "x-c1", "decision": "discard"},
            {"question_id": "x-c1", "decision": "accept", "round": 2},
        ],
    )
    assert load_decisions([good])["x-c1"].decision == "accept"
    bad = write_jsonl(
        tmp_path / "b.jsonl",
        [
            {"candidate_id": "x-c1", "decision": "revise"},
            {"candidate_id": "x-c2", "decision": "maybe"},
            {"candidate_id": "x-c3", "decision": "accept", "revised_question": "?"},
        ],
    )
    with pytest.raises(ValidationError) as info:
        load_decisions([bad])
    text = str(info.value)
    assert "b.jsonl:1" in text
    assert "revised_question" in text
    assert "b.jsonl:2:decision" in text
    assert "b.jsonl:3" in text
    assert "goes only with decision `revise`" in text


def _settings(**kwargs: Any) -> Any:
    from gamut_eval.construct import BuildSettings

    return BuildSettings(**kwargs)


async def test_an_image_without_candidates_is_an_error_not_a_fresh_start(
    manifest: Path, workdir: Path
) -> None:
    def questions(call: Call) -> str:
        return "no" if "Eiffel" in call.user else _questions(call)

    async with BuildSession(workdir, Responder({"questions": questions}).model()) as session:
        await run_questions(session, manifest, per_image=2)
    responder = Responder({"review": _review})
    async with BuildSession(workdir, responder.model()) as session:
        report = await run_review(session)

    [error] = report.errors
    assert (error.id, error.kind) == ("tower", "no-candidates")
    assert all("Eiffel" not in c.user for c in responder.calls)


async def test_proposals_people_decided_on_are_kept_when_the_review_is_redone(
    manifest: Path, workdir: Path, tmp_path: Path
) -> None:
    await _prepare(manifest, workdir)
    discard = [{"candidate_id": f"tower-c{i}", "decision": "discard"} for i in (1, 2)]
    first = write_jsonl(tmp_path / "d1.jsonl", discard)
    counter = iter(range(100))

    def review(call: Call) -> str:
        if "Candidates" not in call.user:  # a fresh proposal every time it is asked
            question = f"What is this landmark, take {next(counter)}?"
            return json.dumps({"reviews": [], "ranking": [], "new_candidates": [question]})
        return _review(call)

    async with BuildSession(workdir, Responder({"review": review}).model()) as session:
        await run_review(session, [first])
    [proposal] = [t for t in read_jsonl(workdir / "review" / "to_annotate.jsonl")
                  if t["origin"] == "proposed"]  # fmt: skip
    second = write_jsonl(
        tmp_path / "d2.jsonl",
        [*discard, {"candidate_id": proposal["candidate_id"], "decision": "accept"}],
    )
    settings = _settings(refresh=True)  # every review call is made again
    async with BuildSession(workdir, Responder({"review": review}).model(), settings) as session:
        report = await run_review(session, [second])

    accepted = {a["id"]: a for a in read_jsonl(workdir / "review" / "accepted.jsonl")}
    assert accepted["tower"]["candidate_id"] == proposal["candidate_id"]
    assert not any("unknown candidates" in note for note in report.notes)
