"""``gamut validate``, ``gamut compile``, ``gamut dataset``, ``gamut schema``, and
``gamut push`` (a dataset, or a run folder, to the Hugging Face Hub).

The library is imported inside the commands, so ``--help`` needs click alone.
"""

from __future__ import annotations

from pathlib import Path

import click

from gamut_eval.cli._common import (
    DATASET_PATH,
    console,
    dump_json,
    err_console,
    image_root_option,
    out_option,
    write_output,
)
from gamut_eval.cli._main import GroupedCommand
from gamut_eval.errors import InputError


def _one_rubric(path: Path) -> bool:
    """Whether ``path`` is a single meta-rubric file (one checklist), not a dataset."""
    from gamut_eval.dataset import is_rubric_file

    return not path.is_dir() and is_rubric_file(path)


def _validate_one(path: Path, image_root: Path | None = None) -> str:
    """A one-line summary of a valid file; raises ``InputError`` otherwise."""
    from gamut_eval.dataset import load_dataset

    dataset = load_dataset(path, image_root=image_root)
    checks = sum(len(c.checks) for c in dataset.checklists().values())
    if _one_rubric(path):
        return f"{checks} checks"
    return f"{len(dataset)} questions, {checks} checks"


@click.command(cls=GroupedCommand)
@click.argument("paths", nargs=-1, required=True, type=DATASET_PATH)
@image_root_option
def validate(paths: tuple[Path, ...], image_root: Path | None) -> None:
    """Check meta-rubric files (YAML/JSON), folders of them, or dataset files (.jsonl).

    `sample` stands for the bundled sample dataset. Every problem of every file is printed
    as `file:json.path: message [rule] (found: value)`. Exit status 0 when all files are
    valid, 2 otherwise.
    """
    failed = 0
    for path in paths:
        try:
            summary = _validate_one(path, image_root)
        except InputError as exc:  # a ValidationError lists every problem
            failed += 1
            click.echo(str(exc), err=True)
        else:
            console.print(f"[green]ok[/green] {path} ({summary})")
    if failed:
        err_console.print(f"{failed} of {len(paths)} file(s) invalid")
        raise SystemExit(2)


@click.command("compile", cls=GroupedCommand)
@click.argument("path", type=DATASET_PATH)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "markdown"]),
    default="json",
    help="JSON for programs; Markdown grouped by tier for people.",
)
@click.option(
    "--short-list-max",
    type=click.IntRange(min=1),
    default=7,
    help="Flexible lists up to this size get one check per option.",
)
@click.option(
    "--coverage-fraction",
    "fractions",
    type=click.FloatRange(min=0, max=1, min_open=True),
    multiple=True,
    help="Higher coverage thresholds as fractions of the pool (repeatable; default 0.5 0.75).",
)
@out_option
def compile_command(
    path: Path, fmt: str, short_list_max: int, fractions: tuple[float, ...], out: Path | None
) -> None:
    """Compile a meta-rubric into its flat binary checklist.

    A meta-rubric file gives one checklist; a dataset (.jsonl) or a folder of meta-rubric
    files gives one checklist per question (JSONL), using a record's revised checklist when
    it has one; `sample` is the bundled sample dataset.
    """
    from gamut_eval.dataset import load_dataset
    from gamut_eval.rubric import CompileConfig, checklist_markdown

    config = CompileConfig(
        short_list_max=short_list_max, coverage_fractions=fractions or (0.5, 0.75)
    )
    dataset = load_dataset(path)
    if not _one_rubric(path):
        checklists = dataset.checklists(config).values()
        if fmt == "markdown":
            text = "\n".join(checklist_markdown(c) for c in checklists)
        else:
            text = "".join(
                dump_json(c.model_dump(mode="json"), indent=None) + "\n" for c in checklists
            )
    else:
        record = dataset.records[0]
        checklist = record.effective_checklist(config)
        if fmt == "markdown":
            text = checklist_markdown(checklist, record.question)
        else:
            text = dump_json(checklist.model_dump(mode="json"))
    write_output(text, out)


@click.command("dataset", cls=GroupedCommand)
@click.argument("paths", nargs=-1, required=True, type=DATASET_PATH)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The dataset file to write (.jsonl, .json or .parquet).",
)
def dataset_command(paths: tuple[Path, ...], out: Path) -> None:
    """Write meta-rubric files (YAML/JSON), folders of them or datasets as one dataset file.

    Each meta-rubric file is one question: its id, question and entity, and beside the
    rubric the optional `question_text_only`, `image` (relative to the file), `domain`,
    `popularity` and `metadata`. Images are written relative to the dataset file (one
    outside its folder is linked or copied into its `images/`). Any command's `--dataset`
    also takes the rubric files themselves; this writes the file to share or push.
    """
    from gamut_eval.dataset import load_dataset, write_dataset

    written = write_dataset([load_dataset(path) for path in paths], out)
    console.print(f"[green]wrote[/green] {out} ({written} question{'' if written == 1 else 's'})")


SCHEMA_KINDS = {
    "meta-rubric": "a question's meta-rubric (YAML or JSON)",
    "dataset": "a dataset row (one question with its meta-rubric; gamut dataset)",
    "responses": "an answer row (gamut judge --responses, gamut run --responses)",
    "checklist": "the compiled binary checklist (gamut compile)",
    "verdicts": "a verdict row (gamut judge, RUN_DIR/verdicts.jsonl)",
    "scores": "a score row (RUN_DIR/scores.jsonl)",
    "run": "the run manifest (RUN_DIR/run.json)",
}


def kind_schema(kind: str) -> dict[str, object]:
    """The JSON Schema of one of ``SCHEMA_KINDS``."""
    if kind == "meta-rubric":
        from gamut_eval.rubric import meta_rubric_json_schema

        return meta_rubric_json_schema()
    from pydantic import BaseModel

    model: type[BaseModel]
    if kind == "dataset":
        from gamut_eval.dataset import DatasetRecord as model
    elif kind == "responses":
        from gamut_eval.responses import ResponseRow as model
    elif kind == "checklist":
        from gamut_eval.rubric import Checklist as model
    elif kind == "verdicts":
        from gamut_eval.judge import VerdictRow as model
    elif kind == "scores":
        from gamut_eval.records import ScoreRow as model
    else:
        from gamut_eval.records import RunManifest as model
    return model.model_json_schema()


@click.command(cls=GroupedCommand)
@click.option(
    "--kind",
    type=click.Choice(list(SCHEMA_KINDS)),
    default="meta-rubric",
    help="Which format: " + "; ".join(f"{k}: {v}" for k, v in SCHEMA_KINDS.items()) + ".",
)
@out_option
def schema(kind: str, out: Path | None) -> None:
    """Print the JSON Schema of a file format (meta-rubric, dataset, responses, checklist,
    verdicts, scores, run).

    With VS Code's YAML extension, put this first line in a rubric file:
    `# yaml-language-server: $schema=path/to/meta-rubric.schema.json`
    """
    write_output(dump_json(kind_schema(kind)), out)


@click.command("push", cls=GroupedCommand)
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.argument("target")
@click.option("-m", "--message", default=None, help="Commit message (default: 'Add SOURCE').")
@click.option(
    "--license",
    "license_id",
    default="unknown",
    help="A dataset's license in its card (a Hub license id, e.g. cc-by-4.0).",
)
@click.option(
    "--description",
    default="",
    show_default=False,
    help="A dataset's description in its card (default: counts).",
)
def push(source: Path, target: str, message: str | None, license_id: str, description: str) -> None:
    """Upload SOURCE (a run folder or a dataset file/folder) to TARGET on the Hub.

    \b
    TARGET is hf://datasets/OWNER/NAME[@REVISION]/PATH: the dataset repository is created
    if it does not exist, and SOURCE lands at PATH in one commit. A run folder's verdict
    store (store.sqlite, a local cache) and lock files are not uploaded. A dataset (a
    dataset file, or a folder holding dataset.jsonl) is checked first and gets a dataset
    card (README.md at the repository's root: configs, features with images as Image,
    license, description) and a flat table for the Hub's viewer and
    `datasets.load_dataset(REPO)`; a README.md gamut-eval did not write is kept. The token
    comes from HF_TOKEN (or `hf auth login`); HF_ENDPOINT points at another Hub.
      gamut push runs/x hf://datasets/me/gamut-runs/x
      gamut run --dataset hf://datasets/me/gamut-runs/data/dataset.jsonl ...
    Needs the optional 'hub' extra: pip install 'gamut-eval[hub]'.
    """
    from gamut_eval._card import dataset_card_files
    from gamut_eval._extras import require_extra
    from gamut_eval.hub import parse_hub_path, push as push_to_hub

    require_extra("hub", "pushing to the Hugging Face Hub")
    where = parse_hub_path(target)
    card = dataset_card_files(
        source, where.repo_id, where.path, license=license_id, description=description
    )
    url = push_to_hub(source, target, message=message, extra=card)
    click.echo(f"pushed {source} to {target}: {url}")


COMMANDS = [validate, compile_command, dataset_command, schema, push]
