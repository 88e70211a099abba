"""Entry point: the command group, and the one place where errors become exit codes
(``EXIT_INPUT``, ``EXIT_FAILURE``).

The group is lazy (click's documented ``LazyGroup`` pattern): ``COMMANDS`` names each
command's module, attribute and one-line help, so ``gamut --help`` lists the commands
without importing any of them, and ``gamut <command>`` imports only that command's module.
A command module must keep its heavy imports (pandas, Inspect AI, FastAPI...) inside its
functions for ``gamut <command> --help`` to stay fast as well.

How ``--help`` reads is here too: one table (``OPTION_GROUPS``) names the group of each
option by its long name, for every command (a new option lands in "Other options" until it
is given a group; a command with few options keeps click's single list), and mistyped
names (commands, options, config keys) get suggestions.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import click

from gamut_eval import __version__
from gamut_eval._extras import missing_extra_message
from gamut_eval.errors import GamutError, InputError

EXIT_INPUT = 2
"""Bad input (a file that breaks a rule, an unknown id...): nothing was written."""
EXIT_FAILURE = 1
"""The work ran but failed (for example a judge backend that could not be used)."""


_GROUPS: dict[str, tuple[str, ...]] = {
    "Inputs": (
        "dataset", "responses", "checklist", "verdicts", "gold", "setting", "fill-missing",
        "image-root", "store", "store-dir", "with", "calibrate-with", "images", "corpus",
        "decisions", "input", "workdir",
    ),
    "Models": (
        "model", "max-connections", "temperature", "max-tokens", "top-p", "reasoning-effort",
        "system-message", "epochs", "model-arg", "log-dir",
    ),
    "Judge": (
        "judge", "backend", "base-url", "judge-prompt", "judge-image", "repeats",
        "calibrate-fraction", "seed", "confidence", "population", "fraction",
        "max-flip-rate", "max-null-pass-rate", "calibrate-prior", "calibrate-width",
    ),
    "Request shape": (
        "judge-temperature", "judge-max-tokens", "judge-reasoning-effort",
        "structured-output", "judge-arg", "inspect-batch",
    ),
    "Build stages": (
        "per-image", "max-rounds", "proposals", "search", "per-query", "max-snippets",
        "max-queries", "max-repairs",
    ),
    "Output": (
        "out", "overwrite", "dry-run", "prices", "output-tokens", "json", "format", "table",
        "message",
    ),
    "Advanced": (
        "config", "concurrency", "adaptive-concurrency", "rpm", "tpm", "timeout",
        "max-retries", "max-reasks", "max-unscored-rate", "probe", "wait-for-store",
        "retry-after-cap", "dead-after", "fetch-timeout", "fetch-max-bytes",
        "max-concurrency", "refresh", "long-answer-tokens",
    ),
}  # fmt: skip

OPTION_GROUPS: dict[str, str] = {name: title for title, names in _GROUPS.items() for name in names}
"""Long option name (without ``--``) -> the ``--help`` section it is listed under."""

_ORDER = (*_GROUPS, "Batch backend", "Ray backend", "Other options")
_GROUP_FROM = 12
"""Commands with fewer options than this keep one list."""


def option_group(param: click.Parameter) -> str:
    """The section of ``--help`` the option ``param`` is listed under (by its long name);
    the scale-out backends' own options (``--batch-*``, ``--ray-*``) have one each."""
    longs = [o for o in param.opts if o.startswith("--")]
    name = longs[0].removeprefix("--") if longs else ""
    if name in OPTION_GROUPS:
        return OPTION_GROUPS[name]
    if name.startswith("batch-"):
        return "Batch backend"
    if name.startswith("ray-"):
        return "Ray backend"
    return "Other options"


class GroupedCommand(click.Command):
    """A command whose ``--help`` lists its options in sections (inputs, models, judge,
    request shape, output, advanced) when it has many."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = [
            (param, record)
            for param in self.get_params(ctx)
            if (record := param.get_help_record(ctx)) is not None
        ]
        if len(records) < _GROUP_FROM:
            super().format_options(ctx, formatter)
            return
        sections: dict[str, list[tuple[str, str]]] = {}
        for param, record in records:
            sections.setdefault(option_group(param), []).append(record)
        for title in _ORDER:
            if title in sections:
                with formatter.section(title):
                    formatter.write_dl(sections[title])


class GroupedGroup(click.Group):
    """A command group whose subcommands are ``GroupedCommand`` and whose unknown
    subcommand names get a suggestion."""

    command_class = GroupedCommand
    group_class = type  # subgroups are GroupedGroups too

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0]) if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hint = did_you_mean(name, self.list_commands(ctx))
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the nearest of ``known`` to ``name``, or an empty string."""
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


@click.command("completion", cls=GroupedCommand)
@click.argument("shell", type=click.Choice(("bash", "zsh", "fish")))
def completion(shell: str) -> None:
    """Print the script that completes gamut's commands, options and choices in SHELL.

    \b
    bash (in ~/.bashrc):  eval "$(gamut completion bash)"
    zsh  (in ~/.zshrc):   eval "$(gamut completion zsh)"
    fish:                 gamut completion fish > ~/.config/fish/completions/gamut.fish
    """
    from click.shell_completion import get_completion_class

    root = click.get_current_context().find_root().command
    shell_class = get_completion_class(shell)
    if shell_class is None:  # click.Choice lets only known shells through
        raise click.BadParameter(shell)
    click.echo(shell_class(root, {}, "gamut", "_GAMUT_COMPLETE").source())


class LazyCommand(NamedTuple):
    """Where a command lives, and the line ``gamut --help`` shows for it."""

    module: str
    attribute: str
    help: str


_CLI = "gamut_eval.cli."

COMMANDS: dict[str, LazyCommand] = {
    "validate": LazyCommand(
        _CLI + "_rubric",
        "validate",
        "Check meta-rubric files (YAML/JSON), folders of them, or dataset files (.jsonl).",
    ),
    "compile": LazyCommand(
        _CLI + "_rubric",
        "compile_command",
        "Compile a meta-rubric into its flat binary checklist.",
    ),
    "dataset": LazyCommand(
        _CLI + "_rubric",
        "dataset_command",
        "Write meta-rubric files (YAML/JSON), folders of them or datasets as one dataset file.",
    ),
    "schema": LazyCommand(
        _CLI + "_rubric",
        "schema",
        "Print the JSON Schema of a file format (meta-rubric, dataset, responses, checklist, "
        "verdicts, scores, run).",
    ),
    "generate": LazyCommand(
        _CLI + "_run",
        "generate",
        "Answer every question with each model, through an Inspect eval set.",
    ),
    "run": LazyCommand(
        _CLI + "_run",
        "run",
        "Generate answers, judge them with each judge, score, and print the leaderboard.",
    ),
    "demo": LazyCommand(
        _CLI + "_run",
        "demo",
        "The whole flow on the bundled sample benchmark, offline: no API key, no network.",
    ),
    "judge": LazyCommand(
        _CLI + "_judge",
        "judge",
        "Grade every check of every response independently, with four verdicts.",
    ),
    "score": LazyCommand(
        _CLI + "_report",
        "score",
        "Score verdicts: one response against a checklist, or every response of a run.",
    ),
    "calibrate": LazyCommand(
        _CLI + "_calibrate",
        "calibrate",
        "Calibrated scores of a finished run: a cheap judge corrected by a strong one.",
    ),
    "calibration-sample": LazyCommand(
        _CLI + "_calibrate",
        "calibration_sample",
        "Draw the random list of questions for people (or a strong judge) to label.",
    ),
    "report": LazyCommand(
        _CLI + "_report",
        "report",
        "Tables and plots of a finished run: leaderboard, judge robustness, modality, diversity.",
    ),
    "view": LazyCommand(
        _CLI + "_report",
        "view",
        "Open a run's HTML report in the browser, or serve it on localhost.",
    ),
    "agreement": LazyCommand(
        _CLI + "_judge",
        "agreement",
        "How well a judge agrees with reference verdicts, and how far the score moves.",
    ),
    "stability": LazyCommand(
        _CLI + "_judge",
        "stability",
        "Judge the same checks N times: flip rate, kappa between repeats, score spread.",
    ),
    "audit-judge": LazyCommand(
        _CLI + "_judge",
        "audit_judge_command",
        "Run the shipped adversarial probes against a judge; exit 1 past the thresholds.",
    ),
    "build": LazyCommand(
        _CLI + "_build",
        "build",
        "Build a GAMUT-style benchmark over your own images, stage by stage.",
    ),
    "push": LazyCommand(
        _CLI + "_rubric",
        "push",
        "Upload SOURCE (a run folder or a dataset file/folder) to TARGET on the Hub.",
    ),
    "completion": LazyCommand(
        _CLI + "_main",
        "completion",
        "Print the script that completes gamut's commands, options and choices in SHELL.",
    ),
    "annotate": LazyCommand(
        _CLI + "_annotate",
        "annotate",
        "Human review of candidate questions and rubrics, in the browser.",
    ),
}
"""Every ``gamut`` command: name -> module, attribute, one-line help. A new command is
added here (a test checks that the help lines match the commands' own)."""


class _Group(GroupedGroup):
    """Loads commands on demand (suggesting the nearest name for an unknown one); turns
    library errors into a message and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            spec = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(spec.module), spec.attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{spec.module}.{spec.attribute} is not a click command")
            self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``COMMANDS``, without importing the command modules."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is not None:
                if loaded.hidden:
                    continue
                text = loaded.get_short_help_str(limit)
            else:
                text = click.Command(name, help=COMMANDS[name].help).get_short_help_str(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GamutError as exc:
            # the library names settings, the command line names options: add the running
            # command's options for the settings the error names
            from gamut_eval.cli._common import with_options

            name = ctx.invoked_subcommand
            command = self.get_command(ctx, name) if name and exc.settings else None
            click.echo(f"error: {with_options(str(exc), exc.settings, command)}", err=True)
            ctx.exit(EXIT_INPUT if isinstance(exc, InputError) else EXIT_FAILURE)
        except Exception as exc:  # a missing optional library, a full disk, deep input
            from gamut_eval.cli._common import failure_message

            if isinstance(exc, ModuleNotFoundError):
                message = missing_extra_message(exc)
            else:
                message = failure_message(exc)
            if message is None:  # not an optional library (a broken install) or a bug
                raise
            click.echo(f"error: {message}", err=True)
            ctx.exit(EXIT_INPUT)


ENV_FILE = ".env"
"""Read from the working folder when there is one (``--env-file`` names another)."""


@click.group(
    cls=_Group,
    context_settings={
        "help_option_names": ["-h", "--help"],
        "max_content_width": 100,
        "show_default": True,
    },
)
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help=f"Environment variables to set (KEY=VALUE lines), instead of ./{ENV_FILE}; never "
    "overrides a variable already set.",
)
@click.version_option(__version__, prog_name="gamut")
def cli(env_file: Path | None) -> None:
    """Grade open-ended answers for factual completeness with two-level meta-rubrics.

    \b
    Typical flow:
      gamut validate rubric.yaml          check a meta-rubric (or a dataset .jsonl)
      gamut compile rubric.yaml           turn it into the flat binary checklist
      gamut run --model M --judge J --out runs/x   answers, verdicts, scores in one go
      gamut demo                          all of it on the bundled sample, offline
      gamut judge --dataset D --responses R --judge MODEL --out V.jsonl
      gamut score --dataset D --verdicts V.jsonl

    Environment variables (API keys...) are also read from ./.env or --env-file, without
    overriding those already set.
    """
    if env_file is None and Path(ENV_FILE).is_file():
        env_file = Path(ENV_FILE)
    if env_file is not None:
        # a dotenv file (KEY=VALUE lines, # comments, quotes, export) read by python-dotenv,
        # imported only when there is a file, as Inspect AI reads its .env
        from dotenv import dotenv_values

        for key, value in dotenv_values(env_file, interpolate=True).items():
            if value is not None and key not in os.environ:
                os.environ[key] = value


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="gamut")
