"""How ``--help`` reads: options grouped by what they are for, and suggestions for
mistyped names (commands, options, config keys).

One table (``OPTION_GROUPS``) names the group of each option by its long name, for every
command: a new option lands in "Other options" until it is given a group. A command
with few options keeps click's single list.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import click

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

_ORDER = (*_GROUPS, "Other options")
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
            title = option_group(param)
            sections.setdefault(title, []).append(record)
        order = [*_ORDER[:-1], "Batch backend", "Ray backend", "Other options"]
        for title in order:
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


SHELLS = ("bash", "zsh", "fish")


@click.command("completion", cls=GroupedCommand)
@click.argument("shell", type=click.Choice(SHELLS))
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
