"""The paper's construction loop end to end, as a user runs it: LLM refinement, a human
round, LLM refinement, a human round (docs/method.md [B8]).

On two of the sample images, with the build's scripted model (``mockllm/model``), the
local search over the shipped corpus, the annotation app driven through its HTTP API, and
the offline judge: no network. The manifest names the tower's entity wrongly; people
correct it in the first rubric round, and the text-only questions must follow.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from construct_helpers import CORPUS, Call, Responder, accepted, read_jsonl, seed, write_jsonl
from fastapi.testclient import TestClient
from sqlalchemy import select

from gamut_eval.annotate import Database, Question, Role, Rubric, add_user, create_app
from gamut_eval.cli import cli
from gamut_eval.construct._refine import refine_units
from gamut_eval.construct._workdir import Workdir
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
WRONG, RIGHT = "Blackpool Tower", "Eiffel Tower"
QUESTION = "What is this and how is it usually made?"
REWORDED = "Which dish is this, and how is it made?"
ITEM = {"id": "x", "type": "fact", "tier": "context", "statement": "x"}


def gamut(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], terminal_width=200)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


class Person:
    """A browser: signs in with a token, sends the CSRF token with every form."""

    def __init__(self, db: Database, name: str, role: Role) -> None:
        token = add_user(db, name, role).token
        self.http = TestClient(
            create_app(db), base_url="http://127.0.0.1:8700", follow_redirects=False
        )
        login = self.http.get("/login").text
        signed = self.http.post("/login", data={"token": token, "csrf_token": _csrf(login)})
        assert signed.status_code == 303, signed.text
        self.csrf = _csrf(self.http.get("/").text)

    def post(self, path: str, data: dict[str, Any]) -> Any:
        response = self.http.post(path, data={"csrf_token": self.csrf, **data})
        assert response.status_code == 303, response.text[:2000]
        return response

    def next_question(self) -> int | None:
        response = self.http.get("/review/next")
        if response.status_code == 200:
            return None
        return int(response.headers["location"].split("/")[-1].split("?")[0])


def _csrf(html: str) -> str:
    match = _CSRF.search(html)
    assert match, html[:500]
    return match[1]


def review_all(db: Database, person: Person, decide: dict[str, str]) -> None:
    """``person`` reviews every question the queue gives them: ``decide[candidate_id]``."""
    while (qid := person.next_question()) is not None:
        with db.read() as session:
            candidate = session.get(Question, qid).candidate_id  # type: ignore[union-attr]
        person.post(f"/questions/{qid}/review", {"decision": decide[candidate]})


def rubric(db: Database, record_id: str) -> Rubric:
    with db.read() as session:
        return session.scalars(select(Rubric).where(Rubric.record_id == record_id)).one()


def _rebuild_with_origin(call: Call) -> str:
    """The second refinement finds a new item (the first keeps the draft as it is)."""
    items = call.data("Draft items")
    if not any(item["id"] == "origin" for item in items):
        cites = items[0]["cites"]
        items = [*items, {"id": "origin", "type": "fact", "tier": "valuable",
                          "statement": "Says where it comes from.", "cites": cites}]  # fmt: skip
    return json.dumps({"items": items, "dropped": []})


def test_two_llm_rounds_and_two_human_rounds_make_a_dataset_that_scores(
    tmp_path: Path, responder: Responder
) -> None:
    images = tmp_path / "images"
    images.mkdir()
    for name in ("sample-bibimbap.png", "sample-eiffel-tower.png"):
        shutil.copy(sample_dir() / "images" / name, images / name)
    manifest = write_jsonl(images / "manifest.jsonl", [
        {"image": "sample-bibimbap.png", "id": "dish", "entity": "Bibimbap", "domain": "food"},
        {"image": "sample-eiffel-tower.png", "id": "tower", "entity": WRONG, "domain": "places"},
    ])  # fmt: skip
    work = tmp_path / "build"
    build = ("--model", "mockllm/model", "--corpus", CORPUS, "--workdir", work)
    db_path = tmp_path / "annotate.sqlite"
    db_opt = ("--db", db_path)

    # Candidate questions, reviewed in the app: two reviewers, an adjudicator for a tie.
    code, out = gamut("build", "all", "--images", manifest, "--per-image", "2", *build)
    assert code == 3, out
    code, out = gamut("annotate", "import", work / "review" / "to_annotate.jsonl", *db_opt)
    assert code == 0, out
    db = Database.open(db_path)
    ann1, ann2 = Person(db, "ann1", Role.ANNOTATOR), Person(db, "ann2", Role.ANNOTATOR)
    adj = Person(db, "adj", Role.ADJUDICATOR)
    first = {"dish-c1": "accept", "dish-c2": "discard", "tower-c1": "accept", "tower-c2": "discard"}
    review_all(db, ann1, first)
    review_all(db, ann2, {**first, "tower-c1": "discard"})
    with db.read() as session:
        tie = session.scalars(select(Question).where(Question.candidate_id == "tower-c1")).one()
    adj.post(f"/questions/{tie.id}/adjudicate", {"version": tie.version, "decision": "accept"})
    decisions = tmp_path / "decisions.jsonl"
    code, out = gamut("annotate", "export", "--out", tmp_path / "q.jsonl",
                      "--decisions", decisions, *db_opt)  # fmt: skip
    assert code == 0, out
    assert {r["candidate_id"]: r["decision"] for r in read_jsonl(decisions)} == first

    # LLM round 1: evidence, draft, refinement, text-only -> dataset.jsonl.
    code, out = gamut("build", "all", "--images", manifest, "--per-image", "2",
                      "--decisions", decisions, *build)  # fmt: skip
    assert code == 0, out
    built = work / "dataset.jsonl"
    text_only = {r.id: r.question_text_only for r in load_dataset(built).records}
    assert text_only["tower"] == f"What is {WRONG} and how is it usually made?"
    assert load_dataset(built).by_id()["dish"].question == QUESTION

    # Human round 1: correct the tower's entity; reword the dish's question and revise one
    # of its checks; mark both done.
    code, out = gamut("annotate", "import", built, *db_opt)
    assert code == 0, out
    tower = rubric(db, "tower")
    ann1.post(f"/rubrics/{tower.id}/entity",
              {"version": tower.version, "entity": RIGHT, "comment": "it is in Paris"})  # fmt: skip
    dish = rubric(db, "dish")
    ann1.post(f"/rubrics/{dish.id}/question", {"version": dish.version, "question": REWORDED})
    dish = rubric(db, "dish")
    form = {"version": dish.version, "comment": "name the dish",
            "check-0-id": "identity", "check-0-text": "Identifies the dish as bibimbap.",
            "check-0-tier": "answer_critical"}  # fmt: skip
    ann2.post(f"/rubrics/{dish.id}/checklist", form)
    for record_id in ("tower", "dish"):
        r = rubric(db, record_id)
        ann1.post(f"/rubrics/{r.id}/complete", {"version": r.version})
    revised_1 = tmp_path / "revised-1.jsonl"
    code, out = gamut("annotate", "export", "--out", revised_1, *db_opt)
    assert code == 0, out
    rows = {r["id"]: r for r in read_jsonl(revised_1)}
    assert rows["tower"]["question_text_only"] == f"What is {RIGHT} and how is it usually made?"
    assert rows["tower"]["meta_rubric"]["entity"] == RIGHT
    assert "question_text_only" not in rows["dish"]  # stale: it rewrote the old wording
    assert set(rows["dish"]["metadata"]["annotation"]["stale"]) == {
        "question_text_only",
        "stranger_test",
    }
    code, out = gamut("build", "diff", work / "draft" / "drafts.jsonl", built)
    assert (code, out.strip()) == (0, "0 removed, 0 changed, 0 moved, 0 reworded, 0 added: "
                                   "NEW is a superset of OLD")  # fmt: skip
    code, out = gamut("build", "diff", built, revised_1)
    assert code == 1, out  # people changed the entity and the question: shown, not refused
    assert f"tower entity: changed {WRONG} -> {RIGHT}" in out

    # LLM round 2, in a build folder of its own: refine the app's export (a pure superset),
    # then write the text-only questions the human round left stale.
    model, folder = ("--model", "mockllm/model"), ("--workdir", tmp_path / "round2")
    round2 = (*model, "--corpus", CORPUS, *folder)
    responder.handlers["rebuild"] = _rebuild_with_origin
    responder.calls.clear()
    code, out = gamut("build", "refine", "--input", revised_1, *round2)
    assert code == 0, out
    refined = tmp_path / "round2" / "refine" / "rubrics.jsonl"
    told = {c.data("Question")["entity"]: c.data("Question")["question"]
            for c in responder.of("queries")}  # fmt: skip
    assert told == {"Bibimbap": REWORDED, RIGHT: QUESTION}  # what people decided
    code, out = gamut("build", "diff", revised_1, refined)
    assert code == 0, out
    assert "dish origin: added [fact, valuable] Says where it comes from." in out
    assert "tower origin: added [fact, valuable] Says where it comes from." in out
    assert "dish identity: changed by people" in out  # round 1's edit travels along
    code, out = gamut("build", "text-only", "--input", refined, *model, *folder)
    assert code == 0, out
    assert "2 row(s): 1 text-only question(s) written, 1 kept" in out
    assert [c.data("Question and entity") for c in responder.of("text_only")] == [
        {"question": REWORDED, "entity": "Bibimbap"}
    ]
    next_round = tmp_path / "round2" / "text-only" / "rubrics.jsonl"

    # Human round 2: import the refined rubrics (round 2 opens), edit an item, export.
    code, out = gamut("annotate", "import", next_round, *db_opt)
    assert code == 0, out
    assert "2 started their next revision round" in out
    dish = rubric(db, "dish")
    assert dish.round == 2
    item = {"id": "origin", "type": "fact", "tier": "valuable",
            "statement": "Says that it comes from Korea.",
            "cites": json.loads(dish.meta_rubric)["items"][1]["cites"]}  # fmt: skip
    ann1.post(f"/rubrics/{dish.id}/item",
              {"version": dish.version, "item_id": "origin", "item": json.dumps(item)})  # fmt: skip
    final = tmp_path / "dataset.jsonl"
    code, out = gamut("annotate", "export", "--out", final, *db_opt)
    assert code == 0, out
    code, out = gamut("build", "diff", next_round, final)
    assert code == 1, out  # people reworded an item: shown, not refused
    assert (
        "dish origin.statement: reworded Says where it comes from. -> Says that it comes "
        "from Korea." in out
    )

    # The benchmark: valid, the corrected entity in the text-only questions, and it scores.
    code, out = gamut("validate", final)
    assert code == 0, out
    dataset = load_dataset(final)
    records = dataset.by_id()
    assert records["tower"].entity == RIGHT
    assert records["tower"].text_only_question() == f"What is {RIGHT} and how is it usually made?"
    assert records["dish"].question == REWORDED
    assert records["dish"].text_only_question() == "Which dish is Bibimbap, and how is it made?"
    for row in read_jsonl(final):  # nobody re-ran the LLM review: still listed as stale
        assert set(row["metadata"]["annotation"]["stale"]) == {"stranger_test"}
    assert records["dish"].checklist is not None
    checks = records["dish"].checklist.by_id()
    assert checks["identity"].text == "Identifies the dish as bibimbap."  # round 1 carried over
    assert checks["origin"].text == "Says that it comes from Korea."
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"question_id": r.id, "model": "me/model", "setting": setting,
         "response": f"This is {r.entity}. It comes from Korea, and people love it."}
        for r in dataset.records for setting in ("multimodal", "text_only")
    ])  # fmt: skip
    run = tmp_path / "run"
    code, out = gamut("run", "--dataset", final, "--responses", answers,
                      "--judge", "gamut/offline", "--out", run)  # fmt: skip
    assert code == 0, out
    scores = read_jsonl(run / "scores.jsonl")
    assert {(s["question_id"], s["setting"]) for s in scores} == {
        (q, s) for q in ("dish", "tower") for s in ("multimodal", "text_only")
    }
    assert all(0.0 <= s["gamut"] <= 1.0 for s in scores)
    db.close()


def test_refining_an_export_in_the_build_folder_researches_what_people_corrected(
    tmp_path: Path,
) -> None:
    """The build folder still holds the accepted question with the old entity and wording;
    the app's export row, with people's corrections, wins."""
    image = tmp_path / "bowl.png"
    shutil.copy(sample_dir() / "images" / "sample-bibimbap.png", image)
    work = tmp_path / "build"
    seed(work, "accepted", [accepted(image, entity=WRONG)])
    meta = {"id": "bowl", "question": REWORDED, "entity": RIGHT, "items": [ITEM]}
    row = {"id": "bowl", "question": REWORDED, "entity": RIGHT, "image": "bowl.png",
           "meta_rubric": meta}  # fmt: skip
    [unit] = refine_units(Workdir(work), write_jsonl(tmp_path / "export.jsonl", [row]))
    assert unit is not None
    assert (unit.question.question, unit.question.entity) == (REWORDED, RIGHT)
    assert unit.question.image == str(image)  # the rest is the build's


def test_text_only_input_takes_dataset_records_only(tmp_path: Path) -> None:
    drafts = tmp_path / "drafts.jsonl"
    meta = {"id": "bowl", "question": QUESTION, "items": [ITEM]}
    write_jsonl(drafts, [{"question_id": "bowl", "meta_rubric": meta,
                          "checklist": {"rubric_id": "bowl", "checks": [
                              {"id": "x", "kind": "fact", "tier": "context", "text": "x",
                               "item": "x"}]}, "provenance": {
                              "stage": "draft", "model": None, "prompt_version": None,
                              "inputs": {}, "key": "k"}}])  # fmt: skip
    code, out = gamut("build", "text-only", "--input", drafts, "--model", "mockllm/model",
                      "--workdir", tmp_path / "w")  # fmt: skip
    assert code == 2, out
    flat = " ".join(out.split())
    assert f"{drafts}:1:$: the text-only stage's source holds dataset records" in flat
    assert flat.endswith("(option --input)")  # the command line adds its option
    assert not (tmp_path / "w" / "text-only").exists()


def test_text_only_input_needs_the_entity_of_a_row_it_rewrites(tmp_path: Path) -> None:
    meta = {"id": "bowl", "question": QUESTION, "items": [ITEM]}
    rows = write_jsonl(tmp_path / "rows.jsonl", [
        {"id": "bowl", "question": QUESTION, "meta_rubric": meta},
        {"id": "cup", "question": QUESTION, "question_text_only": "What is a cup?",
         "meta_rubric": {**meta, "id": "cup"}},  # has one, naming no entity: kept
    ])  # fmt: skip
    code, out = gamut("build", "text-only", "--input", rows, "--model", "mockllm/model",
                      "--workdir", tmp_path / "w")  # fmt: skip
    assert code == 2, out
    assert " ".join(out.split()) == (
        f"error: {rows}:1:entity: a text-only question names the entity in its text; give "
        "the row's `entity` [entity-required] (found: null)"
    )
