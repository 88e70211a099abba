"""``gamut build import``: a build started from an existing question set (CRAG-MM shape).

``crag_mm/single_turn.parquet`` has CRAG-MM's single-turn layout (image bytes in a Hugging
Face ``Image`` struct, the question under ``turns``, the answer under ``answers``);
``questions.csv`` and ``questions.jsonl`` are flat tables with image paths.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from construct_helpers import CORPUS, Responder, read_jsonl

from gamut_eval.cli import cli
from gamut_eval.construct import (
    AcceptedQuestion,
    BuildSession,
    LocalSearch,
    Workdir,
    run_draft,
    run_evidence,
    run_refine,
    run_text_only,
)
from gamut_eval.dataset import load_dataset

CRAG = Path(__file__).parent / "crag_mm"
FLAT = ["--map", "question=query", "--map", "image=image_path", "--map", "entity=entity_name"]
FLAT += ["--map", "answer=ans_full", "--map", "id=interaction_id"]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["build", "import", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, " ".join(result.stderr.split())


def _accepted(workdir: Path) -> list[AcceptedQuestion]:
    return Workdir(workdir).read("accepted", AcceptedQuestion, missing_hint="")


def test_a_crag_mm_parquet_imports_with_its_image_bytes(workdir: Path) -> None:
    code, err = run(
        str(CRAG / "single_turn.parquet"), "--workdir", str(workdir),
        "--map", "question=turns.0.query", "--map", "answer=answers.0.ans_full",
        "--map", "id=session_id", "--map", "domain=turns.0.domain",
    )  # fmt: skip
    assert code == 0, err
    assert "2 question(s) from" in err
    assert "2 image(s) written from the table" in err
    assert "2 question(s) have no entity" in err  # said, with what to map
    first, second = _accepted(workdir)
    assert (first.id, second.id) == ("s-001", "s-002")
    assert first.question == "what is the dish in this bowl and how is it eaten?"
    assert first.answer is not None
    assert first.answer.startswith("This is bibimbap")
    assert (first.domain, second.domain) == ("3", "7")  # CRAG-MM's domains are class ids
    assert first.entity is None
    source = (CRAG / "images" / "bibimbap.png").read_bytes()
    image = Path(first.image)
    assert image.parent == (workdir / "import" / "images").resolve()
    assert image.read_bytes() == source
    assert first.image_sha256 == hashlib.sha256(source).hexdigest()
    assert first.provenance.stage == "import"
    assert first.provenance.inputs["row"] == "1"


def test_csv_and_jsonl_tables_import_the_same_questions(tmp_path: Path) -> None:
    found = []
    for name in ("questions.csv", "questions.jsonl"):
        target = tmp_path / name
        code, err = run(str(CRAG / name), "--workdir", str(target), *FLAT)
        assert code == 0, err
        found.append([q.model_dump(exclude={"provenance"}) for q in _accepted(target)])
    assert found[0] == found[1]
    [bowl, tower] = found[0]
    assert bowl["image"] == str((CRAG / "images" / "bibimbap.png").resolve())
    assert (bowl["id"], bowl["entity"], tower["entity"]) == ("i-001", "Bibimbap", "Eiffel Tower")


async def test_imported_questions_go_through_the_rest_of_the_pipeline(workdir: Path) -> None:
    code, err = run(str(CRAG / "questions.csv"), "--workdir", str(workdir), *FLAT)
    assert code == 0, err
    responder = Responder()
    async with BuildSession(workdir) as session:  # no model: the default queries
        reports = [await run_evidence(session, LocalSearch(CORPUS))]
    async with BuildSession(workdir, responder.model()) as session:
        reports.append(await run_draft(session))
        reports.append(await run_refine(session, LocalSearch(CORPUS)))
        reports.append(await run_text_only(session))
    assert [r.failed for r in reports] == [0, 0, 0, 0], [r.errors for r in reports]
    records = load_dataset(workdir / "dataset.jsonl").records
    assert {r.id for r in records} == {"i-001", "i-002"}
    assert all(r.question_text_only for r in records)
    # the reference answer is a lead for the draft, fenced as data like the question
    drafts = responder.of("draft")
    assert {c.data("Question")["reference_answer"] for c in drafts} == {
        "This is bibimbap, a Korean rice dish.",
        "The Eiffel Tower was built from 1887 to 1889.",
    }
    assert all("a lead, not evidence" in c.user for c in drafts)
    # and a search query of its own
    evidence = read_jsonl(workdir / "evidence" / "evidence.jsonl")
    queries = [q for e in evidence for q in e["queries"]]
    assert "Bibimbap This is bibimbap, a Korean rice dish." in queries, queries


def _table(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    folder = tmp_path / "set"
    shutil.copytree(CRAG / "images", folder / "images")
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


GOOD = {"query": "what is this?", "image_path": "images/bibimbap.png", "interaction_id": "a"}


@pytest.mark.parametrize(
    ("rows", "args", "expected"),
    [
        (
            [GOOD, {**GOOD, "interaction_id": "b", "image_path": "images/missing.png"}],
            [],
            [
                "questions.jsonl:row 2",
                "column 'image_path' (image)",
                "no such image file",
                "images/missing.png",
            ],
        ),
        (
            [GOOD, {**GOOD, "interaction_id": "b", "query": "  "}],
            [],
            ["questions.jsonl:row 2", "column 'query' (question)", "is empty"],
        ),
        (
            [{**GOOD, "query": ["what", "is", "this"]}],
            [],
            ["questions.jsonl:row 1", "column 'query' (question)", "must be text, not list"],
        ),
        (
            [{**GOOD, "image_path": "https://example.org/x.png"}],
            [],
            ["row 1", "image URLs are not downloaded"],
        ),
        (
            [GOOD, {**GOOD, "image_path": "images/eiffel-tower.png"}],
            [],
            ["rows 1 and 2 get the same id 'a'", "(mapping id=COLUMN) (option --map)"],
        ),
        (
            [GOOD],
            ["--map", "entity=entity_name"],
            [
                "questions.jsonl",
                "no column 'entity_name' for the entity",
                "columns: image_path, interaction_id, query",
            ],
        ),
        (
            [{"question": "what is this?", "image_path": "images/bibimbap.png"}],
            ["--map", "image=image_path", "--map", "question=query"],
            ["no column 'query' for the question"],
        ),
        ([GOOD], ["--map", "colour=query"], ["unknown field 'colour'"]),
        ([GOOD], ["--map", "question"], ["write FIELD=COLUMN"]),
    ],
)
def test_bad_rows_and_columns_exit_2_naming_them_and_write_nothing(
    tmp_path: Path, rows: list[dict[str, object]], args: list[str], expected: list[str]
) -> None:
    table = _table(tmp_path, rows)
    workdir = tmp_path / "build"
    mapping = ["--map", "question=query", "--map", "image=image_path", "--map", "id=interaction_id"]
    if any(a.startswith(("image=", "question=")) for a in args):
        mapping = []
    code, err = run(str(table), "--workdir", str(workdir), *mapping, *args)
    assert code == 2, err
    for text in expected:
        assert text in err
    assert not workdir.exists()  # nothing half-written


def test_a_missing_or_unknown_table_exits_2(tmp_path: Path) -> None:
    code, err = run(str(tmp_path / "nope.csv"))
    assert (code, "nope.csv: file not found" in err) == (2, True)
    other = tmp_path / "set.xlsx"
    other.write_bytes(b"PK")
    code, err = run(str(other))
    assert code == 2
    assert "unknown table format" in err


def test_a_hugging_face_path_needs_the_hub_extra_or_a_well_formed_path() -> None:
    code, err = run("hf://datasets/crag-mm-2025")
    assert code == 2
    assert "hf://datasets/OWNER/NAME[@REVISION]/FILE" in err
    if importlib.util.find_spec("huggingface_hub") is None:
        code, err = run("hf://datasets/crag-mm-2025/crag-mm-single-turn-public/data/x.parquet")
        assert code == 2
        assert "pip install 'gamut-eval[hub]'" in err
