"""``gamut build import``: start a build from an existing question set (a table)."""

from __future__ import annotations

from pathlib import Path

import click

from gamut_eval.cli._common import err_console

__all__ = ["import_table"]


@click.command(name="import")
@click.argument("source")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build"),
    show_default=True,
    help="The build folder the next stages read.",
)
@click.option(
    "--map",
    "pairs",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="The column of a field (question, image, id, entity, answer, domain, "
    "popularity); repeatable. A field not mapped is read from the column of its "
    "own name. A dotted COLUMN reads nested values (turns.0.query).",
)
@click.option("--limit", type=int, default=None, help="Import only the first N rows.")
def import_table(source: str, workdir: Path, pairs: tuple[str, ...], limit: int | None) -> None:
    """Import image + question rows from SOURCE as accepted questions.

    SOURCE is a .jsonl, .json, .parquet or .csv table, or a Hugging Face dataset file
    hf://datasets/OWNER/NAME[@REVISION]/FILE (needs the `hub` extra). Image paths are
    relative to the table; image bytes (Parquet, Hugging Face Image columns) are written
    under WORKDIR/import/images/. The questions skip the question and review stages: go on
    with `gamut build evidence`, then draft, refine and text-only.

    \b
    gamut build import crag.parquet --map question=query --map image=image_path \\
        --map answer=ans_full --map id=interaction_id --map entity=entity_name

    A bad row or column stops the import (exit 2) naming the file, row and column, and
    nothing is written.
    """
    from gamut_eval.construct import import_questions, parse_mapping

    report = import_questions(workdir, source, parse_mapping(pairs), limit=limit)
    err_console.print(f"import: {report.summary()}", highlight=False, soft_wrap=True)
    if report.with_entity < report.rows:
        err_console.print(
            f"import: {report.rows - report.with_entity} question(s) have no entity: the "
            "text-only stage skips them (map one with --map entity=COLUMN)",
            highlight=False,
            soft_wrap=True,
        )
    err_console.print(f"next: gamut build evidence --workdir {workdir} ...", highlight=False)
