"""Small helpers shared by commands: output files, JSON, the console."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

__all__ = ["console", "dump_json", "write_output"]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def dump_json(data: Any, *, indent: int | None = 2) -> str:
    return json.dumps(data, indent=indent, ensure_ascii=False)


def write_output(text: str, out: Path | None) -> None:
    """Write ``text`` to ``out`` atomically, or to stdout when ``out`` is None."""
    if out is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    from gamut_eval._files import atomic_writer  # YAML with it: not needed for --help

    with atomic_writer(out) as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    err_console.print(f"wrote {out}")


out_option = click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write here (atomically) instead of to standard output.",
)
