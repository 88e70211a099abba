"""Small helpers shared by commands: output files, JSON, the console."""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


def option_stack(*options: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator for ``options``, which ``--help`` lists in this order (each
    ``click.option`` prepends, so they are applied in reverse)."""

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


class DatasetPath(click.Path):
    """A dataset file, a meta-rubric file or a folder of them, ``sample`` (``SAMPLE_ALIAS``)
    for the bundled sample benchmark, or ``hf://datasets/OWNER/NAME/PATH`` on the Hugging
    Face Hub (fetched with its folder into the Hub cache; the optional ``hub`` extra)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from gamut_eval.data import SAMPLE_ALIAS, SAMPLE_CANDIDATES_ALIAS, resolve_dataset_path

        aliases = (SAMPLE_ALIAS, SAMPLE_CANDIDATES_ALIAS)
        if isinstance(value, str) and (value in aliases or value.startswith("hf://")):
            value = str(resolve_dataset_path(value))
        return super().convert(value, param, ctx)


DATASET_PATH = DatasetPath(path_type=Path)

image_root_option = click.option(
    "--image-root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="The folder the dataset's image paths are relative to and must stay inside "
    "(default: the dataset file's folder).",
)
"""``--image-root DIR``: every command that takes a dataset takes this with it."""


HUB_RUN = "gamut_eval.hub_run"
"""``ctx.meta`` key set when the run folder came from the Hub (its copy is in the cache,
so outputs default to the working folder instead)."""


class RunFolder(click.Path):
    """A run folder, or ``hf://datasets/OWNER/NAME/PATH`` on the Hugging Face Hub (fetched
    into the Hub cache; the optional ``hub`` extra)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("hf://"):
            from gamut_eval.hub import download

            value = str(download(value))
            if ctx is not None:
                ctx.meta[HUB_RUN] = True
        return super().convert(value, param, ctx)


RUN_FOLDER = RunFolder(path_type=Path)


class _LazyConsole:
    """A rich ``Console`` made on first use: importing ``rich.console`` costs ~30 ms, which
    ``--help`` does not need. Attribute access goes to the console."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def resolve(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)


if TYPE_CHECKING:
    console: Console
    err_console: Console
else:
    console = _LazyConsole(highlight=False)
    err_console = _LazyConsole(stderr=True, highlight=False)


def rich_console(console: Console) -> Console:
    """The ``Console`` object itself behind ``console`` (one of the above, or any console),
    for code that needs a real one, such as a live display."""
    return console.resolve() if isinstance(console, _LazyConsole) else console


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


def print_plain(text: str, *, err: bool = False) -> None:
    """A line with a path in it: never wrapped (it must stay copyable) nor read as markup;
    to standard error with ``err``."""
    (err_console if err else console).print(text, markup=False, soft_wrap=True, highlight=False)


def option_of(command: click.Command, setting: str) -> str | None:
    """The long option of ``command`` (or of its subcommands) that sets ``setting`` (the
    keyword argument it fills); of an on/off pair, the switch away from the default."""
    for param in command.params:
        if isinstance(param, click.Option) and param.name == setting:
            away = param.secondary_opts if param.default is True else []
            return max(away or param.opts, key=len)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            if (found := option_of(sub, setting)) is not None:
                return found
    return None


def with_options(text: str, settings: Sequence[str], command: click.Command | None) -> str:
    """``text`` followed by the options of ``command`` that set ``settings``: the library
    names settings, the command line names options (those ``text`` names already are not
    repeated)."""
    found = [option_of(command, s) for s in settings] if command is not None else []
    options = [
        o for o in dict.fromkeys(found) if o and not re.search(rf"{re.escape(o)}(?![\w-])", text)
    ]
    if not options:
        return text
    return f"{text} (option{'s' if len(options) > 1 else ''} {', '.join(options)})"


def failure_message(exc: BaseException) -> str | None:
    """One line for the failures that are the machine's or the input's, not a bug: a full
    disk (``ENOSPC``, a quota, SQLite's ``database or disk is full``, however wrapped) and
    input nested deeper than Python's stack. None for anything else."""
    if isinstance(exc, click.exceptions.Exit | click.exceptions.Abort | click.ClickException):
        return None  # click's own ending, whatever it was raised while handling
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            where = Path(str(current.filename)).parent if current.filename else None
            place = f"the disk holding {where}" if where else "the disk"
            return (
                f"no space left on {place} ({current.strerror or current}): free some space "
                "there, or write to another disk, then run the same command again (finished "
                "work is kept)"
            )
        if type(current).__name__ == "OperationalError" and "disk is full" in str(current):
            return (
                f"no space left on the disk ({current}): free some space on the disk holding "
                "the output folder, then run the same command again (finished work is kept)"
            )
        if isinstance(current, RecursionError):
            return (
                "the input is nested too deeply to read (lists or objects inside each other "
                "thousands of levels deep); is it the right file?"
            )
        pending += [current.__cause__, current.__context__]
        pending += list(getattr(current, "exceptions", ()))
    return None
