"""Fixtures of the annotation app tests: a workspace of import files, a database with one
user per role, the database with everything imported, and signed-in clients.

The database fixture runs every test that uses it twice: on SQLite and on a real
PostgreSQL server (``pg_server``), each migrated from empty."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import (
    CANDIDATES,
    IMAGES,
    Client,
    Workspace,
    candidate_row,
    rubric_row,
    write_jsonl,
)
from pg_server import PostgresServer, postgres_server

from gamut_eval.annotate import Database, Role, add_user, import_files
from gamut_eval.data import sample_dir


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    images = tmp_path / "images"
    images.mkdir()
    for name in IMAGES.values():
        shutil.copy(sample_dir() / "images" / name, images / name)
    candidates = write_jsonl(tmp_path / "candidates.jsonl", [candidate_row(*c) for c in CANDIDATES])
    rubrics = write_jsonl(tmp_path / "rubrics.jsonl", [rubric_row()])
    return Workspace(tmp_path, candidates, rubrics)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test session (a fresh database per test)."""
    with postgres_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An empty database with every migration applied, on each backend."""
    if request.param == "sqlite":
        database = Database.open(tmp_path / "annotate.sqlite")
        yield database
        database.close()
        return
    server: PostgresServer = request.getfixturevalue("postgres")
    with server.database() as url:
        database = Database.open(url)
        yield database
        database.close()


@pytest.fixture
def tokens(db: Database) -> dict[str, str]:
    """One login token per user: three annotators, an adjudicator and an admin."""
    roles = {
        "ann1": Role.ANNOTATOR,
        "ann2": Role.ANNOTATOR,
        "ann3": Role.ANNOTATOR,
        "adj": Role.ADJUDICATOR,
        "admin": Role.ADMIN,
    }
    return {name: add_user(db, name, role).token for name, role in roles.items()}


@pytest.fixture
def loaded(db: Database, workspace: Workspace, tokens: dict[str, str]) -> Database:
    """The database with the candidates and the rubric imported."""
    import_files(db, [workspace.candidates, workspace.rubrics])
    return db


@pytest.fixture
def client(loaded: Database, tokens: dict[str, str]) -> Any:
    """``client("ann1")``: a signed-in client for that user."""
    return lambda name: Client(loaded).login(tokens[name], name)
