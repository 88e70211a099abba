"""Import, export, the command line and migrations: what goes in, what comes out, and
that the exported dataset holds exactly the people's decisions with their provenance."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import (
    KIMCHI,
    NEW_IDENTITY,
    RUBRIC,
    Workspace,
    candidate_row,
    editor,
    expected_checklist,
    rubric_row,
    write_jsonl,
)
from click.testing import CliRunner
from sqlalchemy import select

from gamut_eval.annotate import Database, database_url, export_dataset, import_files
from gamut_eval.annotate._app import check_bind
from gamut_eval.annotate._db import Question
from gamut_eval.cli import cli
from gamut_eval.dataset import load_dataset
from gamut_eval.errors import InputError, ValidationError
from gamut_eval.rubric import MetaRubric, compile_rubric


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_import_says_what_it_imported_and_is_idempotent(db: Database, workspace: Workspace) -> None:
    first = [s.describe() for s in import_files(db, [workspace.candidates, workspace.rubrics])]
    assert first[0].endswith(
        "candidates.jsonl: 6 candidate questions (6 new, 0 already present) for 3 images; "
        "3 new images"
    )
    assert first[1].endswith(
        "rubrics.jsonl: 1 rubrics (1 new, 0 started their next revision round, 0 unchanged, "
        "0 skipped as dropped); 0 new images"
    )
    again = [s.describe() for s in import_files(db, [workspace.candidates, workspace.rubrics])]
    assert "(0 new, 6 already present)" in again[0]
    assert "1 unchanged" in again[1]
    changed = write_jsonl(
        workspace.root / "changed.jsonl", [candidate_row("c-dish-1", "dish", "Another text?")]
    )
    with pytest.raises(
        ValidationError,
        match=r"changed\.jsonl:1:question: this candidate_id was imported with another question",
    ):
        import_files(db, [changed])


def test_import_checks_every_row_before_writing_anything(
    db: Database, workspace: Workspace
) -> None:
    broken = json.loads(json.dumps(RUBRIC))
    broken["items"][0]["tier"] = "critical"
    rows = [
        candidate_row("ok-1", "dish", "A fine question?"),
        {**candidate_row("abs", "dish", "Q?"), "image": "/etc/passwd"},
        {**candidate_row("up", "dish", "Q?"), "image": "../outside.png"},
        {"hello": "world"},
        rubric_row(broken),
    ]
    path = write_jsonl(workspace.root / "bad.jsonl", rows)
    path.write_text(path.read_text() + '{"candidate_id": "torn"')
    with pytest.raises(ValidationError) as caught:
        import_files(db, [workspace.candidates, path])
    text = str(caught.value)
    assert "bad.jsonl:2:image: must be one of .gif, .jpeg, .jpg, .png, .webp [image-type]" in text
    assert "bad.jsonl:3:image: no such file relative to" in text
    assert "[image-exists]" in text
    assert "bad.jsonl:4:$: expected a candidate question" in text
    assert "bad.jsonl:5:meta_rubric.items[0].tier" in text
    assert "bad.jsonl:line 6: the last line is incomplete" in text
    with db.read() as session:
        assert session.scalars(select(Question)).all() == []  # not even the good file


def test_export_holds_exactly_the_decisions_with_provenance(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    second = json.loads(json.dumps(RUBRIC))
    second["id"] = "q-two"
    import_files(
        loaded, [write_jsonl(workspace.root / "two.jsonl", [rubric_row(second, metadata={})])]
    )
    client("ann1").post("/questions/1/review", {"decision": "accept"})
    client("ann2").post("/questions/1/review", {"decision": "accept"})
    compiled = compile_rubric(MetaRubric.model_validate(RUBRIC))
    form = editor(
        compiled,
        1,
        text={"identity": NEW_IDENTITY},
        tier={"core/item-2": "valuable"},
        remove=("toppings/option-3",),
        new=(KIMCHI,),
        comment="review",
    )
    assert client("ann3").post("/rubrics/1/checklist", form).status_code == 303
    assert (
        client("ann1")
        .post(
            "/rubrics/1/entity",
            {"version": 2, "entity": "Dolsot bibimbap", "comment": "stone bowl"},
        )
        .status_code
        == 303
    )
    assert (
        client("ann2").post("/rubrics/1/ambiguous", {"version": 3, "note": "two bowls"}).status_code
        == 303
    )
    assert (
        client("adj")
        .post("/rubrics/2/drop", {"version": 1, "reason": "sources disagree"})
        .status_code
        == 303
    )

    out = workspace.root / "out" / "dataset.jsonl"
    summary = export_dataset(loaded, out)
    assert (summary.version, summary.records, summary.dropped) == (1, 1, 1)
    [record] = load_dataset(out).records  # a valid dataset, images found relative to it
    assert record.checklist == expected_checklist()
    assert record.entity == record.meta_rubric.entity == "Dolsot bibimbap"
    assert record.meta_rubric.items == MetaRubric.model_validate(RUBRIC).items
    # the image lay outside the export's folder: it is brought into its images/, same file
    assert record.image == "images/sample-bibimbap.png"
    assert (workspace.root / "out" / record.image).read_bytes() == (
        workspace.root / "images" / "sample-bibimbap.png"
    ).read_bytes()
    meta = record.metadata
    assert meta["drafted_by"] == "mockllm/model"
    assert meta["candidate_id"] == "c-dish-1"
    note = meta["annotation"]
    assert note["dataset_version"] == 1
    assert note["rubric"]["changes_vs_compiled"] == {
        "added": ["toppings/added-1"],
        "removed": ["toppings/option-3"],
        "changed": {
            "identity": {
                "text": {"before": "Identifies the dish as bibimbap.", "after": NEW_IDENTITY}
            },
            "core/item-2": {"tier": {"before": "answer_critical", "after": "valuable"}},
        },
    }
    events = note["rubric"]["events"]
    assert [(e["by"], e["action"]) for e in events] == [
        ("import:rubrics.jsonl", "import"),
        ("ann3", "checklist"),
        ("ann1", "entity"),
        ("ann2", "ambiguous"),
    ]
    assert events[1]["changes"] == note["rubric"]["changes_vs_compiled"]
    assert events[1]["comment"] == "review"
    assert note["corrections"] == [
        {
            "field": "entity",
            "before": "Bibimbap",
            "after": "Dolsot bibimbap",
            "by": "ann1",
            "at": events[2]["at"],
            "comment": "stone bowl",
        }
    ]
    assert note["ambiguous"]["note"] == "two bowls"
    assert note["ambiguous"]["by"] == "ann2"
    [history] = note["question_review"]
    assert history["candidate_id"] == "c-dish-1"
    assert history["status"] == "accepted"
    assert [(r["by"], r["decision"]) for r in history["reviews"]] == [
        ("ann1", "accept"),
        ("ann2", "accept"),
    ]
    assert history["origin"]["model"] == "mockllm/model"

    manifest = json.loads(summary.manifest.read_text())
    assert manifest["dropped"] == [{"id": "q-two", "reason": "sources disagree"}]
    assert manifest["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert export_dataset(loaded, out).version == 2


def test_decisions_are_what_gamut_build_review_reads(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    from gamut_eval.construct import Candidate, Provenance, load_decisions, revision_of

    ann1, ann2, adj = client("ann1"), client("ann2"), client("adj")
    revised = "What kind of clock is this, and how does it keep time?"
    for c, decision in ((ann1, "accept"), (ann2, "accept")):
        c.post("/questions/1/review", {"decision": decision})  # c-dish-1
    for c, decision in ((ann1, "accept"), (ann2, "discard")):
        c.post("/questions/2/review", {"decision": decision, "comment": "generic"})  # c-dish-2
    ruling = {"decision": "discard", "version": 3, "comment": "dull"}  # two reviews: version 3
    assert adj.post("/questions/2/adjudicate", ruling).status_code == 303
    for c in (ann1, ann2):
        c.post("/questions/5/review", {"decision": "revise", "revised_text": revised})  # c-clock-1
    ann1.post("/questions/3/review", {"decision": "discard"})  # c-plant-1: one review, undecided
    path = workspace.root / "out" / "decisions.jsonl"
    summary = export_dataset(loaded, workspace.root / "out" / "dataset.jsonl", path)
    assert summary.decisions == 3
    decisions = load_decisions([path])  # the build stage's own loader accepts every row
    assert {k: d.decision for k, d in decisions.items()} == {
        "c-dish-1": "accept",
        "c-dish-2": "discard",
        "c-clock-1": "revise",
    }
    assert (decisions["c-dish-1"].annotator, decisions["c-dish-2"].annotator) == (
        "ann1, ann2",
        "adj",
    )
    assert decisions["c-dish-2"].comment == "dull"
    assert decisions["c-clock-1"].revised_question == revised
    assert [r["by"] for r in decisions["c-dish-2"].metadata["reviews"]] == ["ann1", "ann2", "adj"]
    # The revision that re-entered the app's next round has the id gamut build gives it, so
    # its later decision reaches the build's pool, and re-importing it is harmless.
    source = Provenance(stage="questions", model=None, prompt_version=None, inputs={}, key="k")
    parent = Candidate(
        id="c-clock-1", image_id="img-clock", question="q", origin="generated", provenance=source
    )
    build_id = revision_of(parent, decisions["c-clock-1"]).id
    with loaded.read() as session:
        child = session.scalar(select(Question).where(Question.candidate_id == build_id))
    assert child is not None
    assert child.round == 2
    task = {
        "candidate_id": build_id,
        "image_id": "img-clock",
        "image": str(workspace.root / "images" / "sample-wall-clock.png"),
        "question": revised,
        "origin": "revised",
        "boilerplate": False,
        "rank": 1,
    }
    [again] = import_files(loaded, [write_jsonl(workspace.root / "to_annotate.jsonl", [task])])
    assert "(0 new, 1 already present)" in again.describe()


def test_cli_users_token_is_printed_once_and_only_its_hash_stored(tmp_path: Path) -> None:
    db = str(tmp_path / "a.sqlite")
    result = run("annotate", "users", "add", "alice", "--role", "annotator", "--db", db)
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert len(token) >= 40
    assert "shown only now" in result.stderr
    for stored in tmp_path.glob("a.sqlite*"):
        assert token.encode() not in stored.read_bytes()
    assert hashlib.sha256(token.encode()).hexdigest().encode() in b"".join(
        p.read_bytes() for p in tmp_path.glob("a.sqlite*")
    )
    again = run("annotate", "users", "add", "alice", "--role", "admin", "--db", db)
    assert again.exit_code == 2
    assert "already exists" in again.stderr
    assert run("annotate", "users", "add", "bob", "--role", "boss", "--db", db).exit_code == 2
    listing = run("annotate", "users", "list", "--db", db)
    assert listing.stdout.startswith("alice\tannotator\t")
    assert token not in listing.stdout
    rotated = run("annotate", "users", "token", "alice", "--db", db).stdout.strip()
    assert rotated != token


def test_cli_import_and_export(tmp_path: Path, workspace: Workspace) -> None:
    db = str(tmp_path / "cli.sqlite")
    result = run(
        "annotate", "import", str(workspace.candidates), str(workspace.rubrics), "--db", db
    )
    assert result.exit_code == 0, result.output
    assert "6 candidate questions (6 new" in result.stdout
    assert "1 rubrics (1 new" in result.stdout
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"candidate_id": "x", "question": "Q?"}])
    failed = run("annotate", "import", str(bad), "--db", db)
    assert failed.exit_code == 2
    assert "bad.jsonl:1:image: a candidate needs `image`" in failed.stderr
    out = tmp_path / "ds.jsonl"
    exported = run(
        "annotate",
        "export",
        "--out",
        str(out),
        "--decisions",
        str(tmp_path / "decisions.jsonl"),
        "--db",
        db,
    )
    assert exported.exit_code == 0, exported.output
    assert "dataset version 1, 1 questions" in exported.stdout
    assert "0 decided candidates" in exported.stdout
    assert "1 rubrics are not marked done" in exported.stdout
    assert len(load_dataset(out)) == 1


def test_serve_binds_beyond_loopback_only_with_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr("gamut_eval.annotate._app.uvicorn.run", lambda app, **kw: calls.append(kw))
    db = str(tmp_path / "s.sqlite")
    refused = run("annotate", "serve", "--db", db, "--host", "0.0.0.0")
    assert refused.exit_code == 2
    assert "refusing to listen on 0.0.0.0" in refused.stderr
    assert not calls
    assert run("annotate", "serve", "--db", db).exit_code == 0  # loopback is fine
    run("annotate", "users", "add", "root", "--role", "admin", "--db", db)
    assert (
        run(
            "annotate", "serve", "--db", db, "--host", "0.0.0.0", "--allow-host", "annotate.lab"
        ).exit_code
        == 0
    )
    assert [(c["host"], c["port"]) for c in calls] == [("127.0.0.1", 8700), ("0.0.0.0", 8700)]
    with pytest.raises(InputError):
        check_bind("192.168.1.5", 0)
    check_bind("::1", 0)


def test_migrate_command_creates_a_sqlite_file(tmp_path: Path) -> None:
    result = run("annotate", "migrate", "--db", str(tmp_path / "m.sqlite"))
    assert result.exit_code == 0
    assert "up to date" in result.stdout
    assert (tmp_path / "m.sqlite").is_file()


def test_db_option_takes_a_path_or_a_url(tmp_path: Path) -> None:
    assert database_url(tmp_path / "x.sqlite") == f"sqlite:///{tmp_path / 'x.sqlite'}"
    assert (
        database_url("postgresql+psycopg://team@db.lab/annotate")
        == "postgresql+psycopg://team@db.lab/annotate"
    )
    # No driver named: psycopg 3 (what the extra installs), not SQLAlchemy's psycopg2.
    for scheme in ("postgresql", "postgres"):
        assert (
            database_url(f"{scheme}://team:pw@db.lab:5433/annotate")
            == "postgresql+psycopg://team:pw@db.lab:5433/annotate"
        )


def test_public_api_is_exactly_all() -> None:
    import types

    import gamut_eval.annotate as annotate

    for name in annotate.__all__:  # names are loaded on first use; load them all
        getattr(annotate, name)
    public = {
        name
        for name, value in vars(annotate).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"  # from __future__
    }
    assert set(annotate.__all__) == public


def test_images_brought_into_an_export_keep_distinct_names(tmp_path: Path) -> None:
    from gamut_eval._files import image_inside

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n first")
    (tmp_path / "b" / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n second")
    out = tmp_path / "out"
    first = image_inside(tmp_path / "a" / "x.png", out)
    second = image_inside(tmp_path / "b" / "x.png", out)
    again = image_inside(tmp_path / "a" / "x.png", out)
    assert (first, second, again) == ("images/x.png", "images/x-2.png", "images/x.png")
    assert (out / second).read_bytes().endswith(b"second")
    assert image_inside(out / "images" / "x.png", out) == "images/x.png"  # already inside
