"""Entry point: the command group and the one place where errors become exit codes."""

from __future__ import annotations

import sys
from typing import Any

import click

from gamut_eval import __version__
from gamut_eval.errors import GamutError, InputError

EXIT_INPUT = 2
"""Bad input (a file that breaks a rule, an unknown id...): nothing was written."""
EXIT_FAILURE = 1
"""The work ran but failed (for example a judge backend that could not be used)."""


class _Group(click.Group):
    """Turns library errors into a clear message on stderr and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_INPUT)
        except GamutError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_FAILURE)


@click.group(
    cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="gamut")
def cli() -> None:
    """Grade open-ended answers for factual completeness with two-level meta-rubrics.

    \b
    Typical flow:
      gamut validate rubric.yaml          check a meta-rubric (or a dataset .jsonl)
      gamut compile rubric.yaml           turn it into the flat binary checklist
      gamut run --model M --judge J --out runs/x   answers, verdicts, scores in one go
      gamut demo                          all of it on the bundled sample, offline
      gamut judge --dataset D --responses R --judge MODEL --out V.jsonl
      gamut score --dataset D --verdicts V.jsonl
    """


def _register() -> None:
    from gamut_eval.cli import (
        _annotate,
        _build,
        _judge,
        _quality,
        _report,
        _rubric,
        _run,
        _score,
    )

    for module in (_rubric, _run, _judge, _score, _report, _quality, _build, _annotate):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="gamut")
