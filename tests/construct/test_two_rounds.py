"""The two-round schedule on the bundled sample (docs/building.md, "Two human rounds"):
LLM refine -> people -> LLM refine -> people, through the build and the annotation app's
import and export, with the scripted ``mockllm`` model and the sample's own snippets served
as their source pages (offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from construct_helpers import Call, Responder, read_jsonl
from sqlalchemy import select
from test_construct_cli import run

from gamut_eval.annotate import Database, Rubric, export_dataset, import_files
from gamut_eval.construct import (
    BuildSession,
    FetchedPage,
    Fetcher,
    LocalSearch,
    ResearchSettings,
    StageReport,
    run_refine,
)
from gamut_eval.construct._models import RefinedRecord
from gamut_eval.data import sample_dir
from gamut_eval.rubric import Checklist, compile_rubric

SAMPLE = sample_dir() / "dataset.jsonl"


class SnippetPages(Fetcher):
    """A sample source's page is the text of the sample's snippets from it (no network)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.pages: dict[str, str] = {}
        for row in rows:
            for e in row["meta_rubric"]["evidence"]:
                self.pages[e["source"]] = self.pages.get(e["source"], "") + "\n" + e["text"]

    async def fetch(self, source: str) -> FetchedPage:
        if source in self.pages:
            return FetchedPage(text=self.pages[source])
        return await super().fetch(source)  # the local corpus's files


def _rebuild(weaken: bool) -> Any:
    """Round 1 demotes the espresso identity (to be restored); every round adds a drink."""

    def answer(call: Call) -> str:
        items = call.data("Draft items")
        for item in items:
            if item["id"] == "drinks":
                item["options"].append(f"drink {len(item['options']) + 1}")
            if weaken and item["id"] == "identity" and "drinks" in json.dumps(items):
                item["tier"] = "context"
        return json.dumps({"items": items, "dropped": []})

    return answer


async def _refine(workdir: Path, source: Path, corpus: Path, weaken: bool) -> StageReport:
    responder = Responder({"rebuild": _rebuild(weaken)})
    async with BuildSession(workdir, responder.model()) as session:
        return await run_refine(
            session,
            LocalSearch(corpus),
            SnippetPages(read_jsonl(SAMPLE)),
            ResearchSettings(1, 2, 1),
            source,
        )


def _espresso(workdir: Path) -> RefinedRecord:
    rows = read_jsonl(workdir / "refine" / "refined.jsonl")
    return RefinedRecord.model_validate(
        next(r for r in rows if r["question_id"] == "sample-espresso")
    )


def _edit_identity(db: Database, text: str) -> None:
    with db.write() as session, session.begin():
        rubric = session.scalars(select(Rubric).where(Rubric.record_id == "sample-espresso")).one()
        checklist = Checklist.model_validate_json(rubric.checklist)
        checks = tuple(
            c.model_copy(update={"text": text}) if c.id == "identity" else c
            for c in checklist.checks
        )
        rubric.checklist = checklist.model_copy(update={"checks": checks}).model_dump_json()


async def test_two_llm_refinements_and_two_human_rounds_on_the_sample(
    tmp_path: Path, corpus: Path
) -> None:
    # LLM refinement of the sample's rubrics.
    round1 = tmp_path / "round-1"
    report = await _refine(round1, SAMPLE, corpus, weaken=True)
    assert report.failed == 0
    refined = _espresso(round1)
    assert [c.path for c in refined.restored] == ["identity.tier"]
    assert {c.kind for c in refined.changes} == {"added"}
    code, _, _ = run("build", "diff", str(SAMPLE), str(round1 / "refine" / "rubrics.jsonl"))
    assert code == 0

    # Human round 1 in the annotation app.
    db = Database.open(tmp_path / "annotate.sqlite")
    [imported] = import_files(db, [round1 / "refine" / "rubrics.jsonl"])
    assert "12 rubrics (12 new" in imported.describe()
    _edit_identity(db, "Names the drink: espresso.")
    revised = tmp_path / "revised-1.jsonl"
    export_dataset(db, revised)

    # LLM refinement of the revised rubrics, in a folder of its own.
    round2 = tmp_path / "round-2"
    report = await _refine(round2, revised, corpus, weaken=False)
    assert report.failed == 0
    again = _espresso(round2)
    assert [(e.check, e.kind, e.fits) for e in again.people_edits] == [
        ("identity", "changed", True)
    ]
    code, out, _ = run("build", "diff", str(revised), str(round2 / "refine" / "rubrics.jsonl"))
    assert code == 0
    assert "sample-espresso identity: changed by people" in out
    assert "(re-applied on import)" in out

    # Human round 2: the refined rubrics open their next round with people's edit carried.
    [second] = import_files(db, [round2 / "refine" / "rubrics.jsonl"])
    assert "1 edits of the previous round carried over" in second.describe()
    with db.write() as session:
        rubric = session.scalars(select(Rubric).where(Rubric.record_id == "sample-espresso")).one()
        checks = Checklist.model_validate_json(rubric.checklist).by_id()
        assert rubric.round == 2
    db.close()
    assert checks["identity"].text == "Names the drink: espresso."
    compiled = compile_rubric(again.meta_rubric).by_id()
    assert checks.keys() == compiled.keys()
    assert all(checks[k] == compiled[k] for k in compiled if k != "identity")
