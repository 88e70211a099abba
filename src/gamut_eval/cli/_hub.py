"""``gamut push``: upload a run folder or a dataset to the Hugging Face Hub."""

from __future__ import annotations

from pathlib import Path

import click

from gamut_eval.cli._help import GroupedCommand

__all__ = ["COMMANDS", "push"]


@click.command("push", cls=GroupedCommand)
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.argument("target")
@click.option("-m", "--message", default=None, help="Commit message (default: 'Add SOURCE').")
def push(source: Path, target: str, message: str | None) -> None:
    """Upload SOURCE (a run folder or a dataset file/folder) to TARGET on the Hub.

    \b
    TARGET is hf://datasets/OWNER/NAME[@REVISION]/PATH: the dataset repository is created
    if it does not exist, and SOURCE lands at PATH in one commit. A run folder's verdict
    store (store.sqlite, a local cache) and lock files are not uploaded. The token comes
    from HF_TOKEN (or `hf auth login`); HF_ENDPOINT points at another Hub.
      gamut push runs/x hf://datasets/me/gamut-runs/x
      gamut run --dataset hf://datasets/me/gamut-runs/data/dataset.jsonl ...
    Needs the optional 'hub' extra: pip install 'gamut-eval[hub]'.
    """
    from gamut_eval.hub import push as push_to_hub

    url = push_to_hub(source, target, message=message)
    click.echo(f"pushed {source} to {target}: {url}")


COMMANDS = [push]
