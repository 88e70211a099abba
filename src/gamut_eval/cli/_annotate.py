"""``gamut annotate``: the human review app (serve, users, import, export, migrate).

The app's libraries (FastAPI, SQLAlchemy, Alembic) are imported inside the commands, so
every other ``gamut`` command starts without paying for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gamut_eval.cli._common import DATASET_PATH, console, err_console, with_options
from gamut_eval.cli._main import GroupedGroup

if TYPE_CHECKING:
    from gamut_eval.annotate import Database

_ROLES = ("annotator", "adjudicator", "admin")
"""The values of ``gamut_eval.annotate.Role``, spelled out to keep the import lazy."""

_db_option = click.option(
    "--db",
    default="annotate.sqlite",
    help="A SQLite file, or a SQLAlchemy URL (postgresql://...) for a team.",
)


@contextmanager
def _database(db: str) -> Iterator[Database]:
    from gamut_eval._extras import require_extra

    require_extra("annotate", "gamut annotate")  # after parsing: --help needs no extra
    from gamut_eval.annotate import Database

    database = Database.open(db)
    try:
        yield database
    finally:
        database.close()


@click.group("annotate", cls=GroupedGroup)
def annotate() -> None:
    """Human review of candidate questions and rubrics, in the browser.

    \b
    A review round:
      gamut annotate users add alice --role annotator   prints alice's login token once
      gamut annotate users add carol --role adjudicator
      gamut annotate import WORK/review/to_annotate.jsonl   candidates from `gamut build review`
      gamut annotate import sample-candidates sample      or try it on the bundled sample
      gamut annotate serve                              then open http://127.0.0.1:8700
      gamut annotate export --out dataset.jsonl --decisions decisions.jsonl

    \b
    People's verdicts for calibrated scores:
      gamut calibration-sample --dataset D --fraction 0.2 -o sample.txt
      gamut annotate import-answers RUN_DIR --sample sample.txt   the answers to label
      gamut annotate export-labels --out labels.jsonl     people label at /labels first
      gamut calibrate RUN_DIR --with labels.jsonl --dataset D

    Needs the optional 'annotate' extra: pip install 'gamut-eval[annotate]'.
    """


@annotate.command("serve")
@_db_option
@click.option("--host", default="127.0.0.1", help="Address to listen on.")
@click.option("--port", default=8700, type=click.IntRange(1, 65535))
@click.option(
    "--allow-host",
    multiple=True,
    help="A host name browsers use to reach the app (e.g. the server's DNS name); "
    "requests naming any other host are refused. Repeatable.",
)
@click.option(
    "--session-idle",
    default=60.0,
    type=click.FloatRange(min=1, max=24 * 60),
    metavar="MINUTES",
    help="Sign a browser out after this many minutes without a request (sessions last "
    "12 hours at most).",
)
@click.option(
    "--forwarded-allow-ips",
    default="",
    show_default=False,
    metavar="ADDRESSES",
    help="Comma-separated addresses or networks of the reverse proxies whose "
    "X-Forwarded-For and X-Forwarded-Proto headers are believed (as uvicorn's option of "
    "that name). Default: none, so a client cannot choose its own address.",
)
def serve_command(
    db: str,
    host: str,
    port: int,
    allow_host: tuple[str, ...],
    session_idle: float,
    forwarded_allow_ips: str,
) -> None:
    """Run the web app (migrates the database first)."""
    from gamut_eval.annotate import check_bind, count_users, serve

    with _database(db) as database:
        check_bind(host, count_users(database))
        err_console.print(
            f"gamut annotate on http://{host}:{port} (database {database.shown}; sessions "
            f"end after {session_idle:g} idle minutes)"
        )
        proxies = [ip.strip() for ip in forwarded_allow_ips.split(",") if ip.strip()]
        serve(database, host, port, allow_host, session_idle, forwarded_allow_ips=proxies)


@annotate.command("migrate")
@_db_option
def migrate_command(db: str) -> None:
    """Create the database or bring its schema up to date."""
    with _database(db) as database:
        console.print(f"database {database.shown} is up to date")


@annotate.group("users")
def users() -> None:
    """Who may sign in, and with which role."""


@users.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(_ROLES), required=True)
@_db_option
def users_add(name: str, role: str, db: str) -> None:
    """Create a user and print their login token (shown this once; only a hash is kept)."""
    from gamut_eval.annotate import Role, add_user

    with _database(db) as database:
        issued = add_user(database, name, Role(role))
    err_console.print(f"created {issued.name} ({issued.role.value}); login token, shown only now:")
    click.echo(issued.token)


@users.command("token")
@click.argument("name")
@_db_option
def users_token(name: str, db: str) -> None:
    """Issue a new token for NAME; the old one and its sessions stop working."""
    from gamut_eval.annotate import reset_token

    with _database(db) as database:
        issued = reset_token(database, name)
    err_console.print(f"new login token for {issued.name}, shown only now:")
    click.echo(issued.token)


@users.command("list")
@_db_option
def users_list(db: str) -> None:
    """The users and their roles."""
    from gamut_eval.annotate import list_users

    with _database(db) as database:
        for name, role, created in list_users(database):
            click.echo(f"{name}\t{role.value}\t{created}")


@annotate.command("import")
@click.argument("files", nargs=-1, required=True, type=DATASET_PATH)
@_db_option
def import_command(files: tuple[Path, ...], db: str) -> None:
    """Import candidate questions and rubrics (dataset records) from `gamut build`
    (`sample`: the bundled sample's rubrics; `sample-candidates`: candidate questions over
    its images, to try the question round).

    Each row's kind is told by its fields. All files are checked first; if any row is
    invalid nothing is imported and every problem is listed.
    """
    from gamut_eval.annotate import import_files

    with _database(db) as database:
        for summary in import_files(database, list(files)):
            click.echo(summary.describe())


@annotate.command("export")
@click.option(
    "-o",
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The dataset (JSONL); a NAME.manifest.json is written beside it.",
)
@click.option(
    "--decisions",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the final decision on every decided candidate here (JSONL, the rows "
    "`gamut build review --decisions` reads).",
)
@_db_option
def export_command(out: Path, decisions: Path | None, db: str) -> None:
    """Write the versioned dataset with every decision's provenance in `metadata`."""
    from gamut_eval.annotate import export_dataset

    with _database(db) as database:
        summary = export_dataset(database, out, decisions)
    click.echo(summary.describe())


@contextmanager
def _options_named() -> Iterator[None]:
    """An input error naming settings gets this command's options for them (a subcommand
    of a group, which the top level cannot look up)."""
    from gamut_eval.errors import InputError

    try:
        yield
    except InputError as exc:
        if not exc.settings or type(exc) is not InputError:
            raise
        command = click.get_current_context().command
        raise InputError(with_options(str(exc), exc.settings, command)) from None


@annotate.command("import-answers")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--sample",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The list of questions to label (one id a line, as `gamut calibration-sample` writes it).",
)
@click.option(
    "--dataset",
    type=DATASET_PATH,
    default=None,
    help="The run's dataset (default: the one RUN_DIR/run.json records): each question's "
    "checklist.",
)
@_db_option
def import_answers_command(run_dir: Path, sample: Path, dataset: Path | None, db: str) -> None:
    """Import, for people to label, every answer of a run folder (all models and
    settings) to the questions of a calibration sample, with each question's checklist.

    Labellers then give each check a verdict at /labels; `gamut annotate export-labels`
    writes the verdict file `gamut calibrate --with` reads.
    """
    from gamut_eval.annotate import import_answers

    with _options_named(), _database(db) as database:
        click.echo(import_answers(database, run_dir, sample, dataset).describe())


@annotate.command("export-labels")
@click.option(
    "-o",
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The verdict file to write (JSONL).",
)
@click.option(
    "--judge",
    default="people",
    help="The `judge` field of every row (default with --labeller: their name).",
)
@click.option("--labeller", default=None, help="Export this person's labels only.")
@_db_option
def export_labels_command(out: Path, judge: str, labeller: str | None, db: str) -> None:
    """Write people's verdicts (question_id, model, setting, judge, check_id, verdict,
    labeller) on every answer whose checks are all labelled, for
    `gamut calibrate RUN_DIR --with FILE --dataset D`.
    """
    from gamut_eval.annotate import export_labels

    with _options_named(), _database(db) as database:
        click.echo(export_labels(database, out, judge=judge, labeller=labeller).describe())


COMMANDS = [annotate]
