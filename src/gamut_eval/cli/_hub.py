"""``gamut push``: upload a run folder or a dataset to the Hugging Face Hub."""

from __future__ import annotations

from pathlib import Path

import click

from gamut_eval.cli._help import GroupedCommand


@click.command("push", cls=GroupedCommand)
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.argument("target")
@click.option("-m", "--message", default=None, help="Commit message (default: 'Add SOURCE').")
@click.option(
    "--license",
    "license_id",
    default="unknown",
    show_default=True,
    help="A dataset's license in its card (a Hub license id, e.g. cc-by-4.0).",
)
@click.option(
    "--description", default="", help="A dataset's description in its card (default: counts)."
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


COMMANDS = [push]
