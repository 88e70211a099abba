"""The database backends: migrations from empty (and from the first release) on SQLite and
PostgreSQL, the ``--db`` URL errors a user meets, and simultaneous writers losing nothing."""

from __future__ import annotations

import hashlib
import shutil
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from annotate_helpers import IMAGES, RUBRIC, Client, editor
from click.testing import CliRunner
from pg_server import PostgresServer
from sqlalchemy import create_engine, select, text

from gamut_eval.annotate import Database
from gamut_eval.annotate._db import Base, Image, Question, Review, Rubric, RubricEvent
from gamut_eval.annotate._rubrics import checklist_of
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.rubric import Checklist, MetaRubric, Tier, compile_rubric

MIGRATIONS = Path(__file__).parents[2] / "src" / "gamut_eval" / "annotate" / "migrations"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def test_migrations_from_empty_match_the_models_and_rerun_cleanly(db: Database) -> None:
    """The ``db`` fixture migrated an empty database (SQLite and PostgreSQL) to the head."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    db.migrate()  # idempotent
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == head
        assert compare_metadata(context, Base.metadata) == []


def test_upgrade_from_the_first_release_hashes_the_imported_images(
    db: Database, tmp_path: Path
) -> None:
    """A database of the first release (0001) with an image row gains its content hash."""
    image = tmp_path / IMAGES["dish"]
    shutil.copy(sample_dir() / "images" / IMAGES["dish"], image)
    with db.engine.begin() as connection:  # back to 0001, then one image as 0001 stored it
        config = _config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0001")
        connection.execute(
            text(
                "INSERT INTO images (key, path, created_at) VALUES "
                "('img-dish', :path, 'x'), ('img-gone', '/no/such/file.png', 'x')"
            ),
            {"path": str(image)},
        )
    db.migrate()
    with db.read() as session:
        hashes = {i.key: i.sha256 for i in session.scalars(select(Image))}
    assert hashes == {
        "img-dish": hashlib.sha256(image.read_bytes()).hexdigest(),
        "img-gone": None,
    }


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_a_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    result = run("annotate", "migrate", "--db", "postgresql://team:secret@db.lab/annotate")
    assert result.exit_code == 2
    assert "the database driver 'psycopg' is not installed" in result.output
    assert "pip install 'gamut-eval[annotate]'" in result.output
    assert "secret" not in result.output  # the password is masked
    assert "Traceback" not in result.output


def test_an_unreachable_server_and_an_unknown_scheme_are_clear_errors(tmp_path: Path) -> None:
    socket = tmp_path / "no-server"
    result = run("annotate", "migrate", "--db", f"postgresql://team:secret@/x?host={socket}")
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot open the database postgresql+psycopg://")
    assert "secret" not in result.output
    result = run("annotate", "migrate", "--db", "mysqlx://db.lab/annotate")
    assert result.exit_code == 2
    assert "SQLAlchemy has no dialect for 'mysqlx'" in result.output
    assert result.output.strip().endswith("(option --db)")  # the command line adds it


def test_the_cli_migrates_a_postgresql_url(postgres: PostgresServer) -> None:
    """``gamut annotate migrate`` and ``users add`` on a plain ``postgresql://`` URL."""
    with postgres.database() as url:
        plain = url.replace("postgresql+psycopg://", "postgresql://")
        result = run("annotate", "migrate", "--db", plain)
        assert result.exit_code == 0, result.output
        assert "is up to date" in " ".join(result.stdout.split())
        assert (
            run("annotate", "users", "add", "alice", "--role", "admin", "--db", plain).exit_code
            == 0
        )
        engine = create_engine(url)
        with engine.connect() as connection:
            assert connection.scalar(text("SELECT name FROM users")) == "alice"
        engine.dispose()


ROUNDS = 6
"""Edits each person makes, each from a page opened before anyone saved."""


# FastAPI silences this pydantic warning with warnings.catch_warnings(), which is not
# thread-safe: with several test clients in threads it can escape as an error.
@pytest.mark.filterwarnings("ignore::pydantic.warnings.UnsupportedFieldAttributeWarning")
def test_two_annotators_and_an_adjudicator_writing_at_once_lose_nothing(
    loaded: Database, tokens: dict[str, str]
) -> None:
    """Three people edit different checks of one rubric from the same stale page, over
    HTTP, at the same moments, while the two annotators also review the same questions:
    every edit lands, every review is kept, and the audit trail has each save once."""
    compiled = compile_rubric(MetaRubric.model_validate(RUBRIC))
    mine = {"ann1": "identity", "ann2": "core/item-1", "adj": "toppings/option-1"}
    clients = {name: Client(loaded).login(tokens[name], name) for name in mine}
    with loaded.read() as session:
        questions = [q.id for q in session.scalars(select(Question).order_by(Question.id))]
    # Build the routes once, in one thread (FastAPI builds a route's models on its first
    # request; uvicorn's single event loop does that in one thread too): no change, no write.
    assert clients["ann1"].post("/rubrics/1/checklist", editor(compiled, 1)).status_code == 303
    assert clients["ann1"].post("/questions/1/review", {"decision": "?"}).status_code == 422
    barrier = threading.Barrier(len(mine), timeout=120)  # a failed thread fails the test
    statuses: dict[str, list[int]] = {name: [] for name in mine}

    failures: list[str] = []

    def work(name: str) -> None:
        try:
            edits(name)
        except BaseException:  # a thread's error must fail the test, with its traceback
            failures.append(traceback.format_exc())
            barrier.abort()

    def edits(name: str) -> None:
        c = clients[name]
        page = compiled  # each person's page: the first version, with their own saves
        for n in range(ROUNDS):
            form = editor(page, 1, text={mine[name]: f"{name} edit {n}."})
            page = Checklist.model_validate(
                {
                    **page.model_dump(mode="json"),
                    "checks": [
                        {**c.model_dump(mode="json"), "text": f"{name} edit {n}."}
                        if c.id == mine[name]
                        else c.model_dump(mode="json")
                        for c in page.checks
                    ],
                }
            )
            barrier.wait()
            statuses[name].append(c.post("/rubrics/1/checklist", form).status_code)
            if name != "adj":
                review = c.post(
                    f"/questions/{questions[n]}/review", {"decision": "accept", "comment": name}
                )
                statuses[name].append(review.status_code)

    threads = [threading.Thread(target=work, args=(name,)) for name in mine]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert statuses == {
        "ann1": [303] * (2 * ROUNDS),
        "ann2": [303] * (2 * ROUNDS),
        "adj": [303] * ROUNDS,
    }
    with loaded.read() as session:
        rubric = session.get(Rubric, 1)
        assert rubric is not None
        checks = checklist_of(rubric).by_id()
        events = session.scalars(select(RubricEvent).where(RubricEvent.action == "checklist"))
        actors = sorted(e.actor for e in events)
        reviews = session.scalars(select(Review)).all()
    assert rubric.version == 1 + len(mine) * ROUNDS
    for name, check in mine.items():
        assert checks[check].text == f"{name} edit {ROUNDS - 1}."
    untouched = [c for c in compiled.checks if c.id not in mine.values()]
    assert all(checks[c.id].text == c.text and checks[c.id].tier == c.tier for c in untouched)
    assert checks["core/item-2"].tier is Tier.ANSWER_CRITICAL
    assert actors == sorted([*mine] * ROUNDS)
    assert sorted((r.question_id, r.comment) for r in reviews) == sorted(
        (q, name) for q in questions[:ROUNDS] for name in ("ann1", "ann2")
    )
