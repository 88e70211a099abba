"""Command-line options derived from settings models: one source for every default.

Each field of a settings model (``JudgeSettings``, ``BatchSettings``, ``RaySettings``,
``GenerationSettings``) is an option: the name from the field (or its ``cli`` metadata),
the type and bounds from its annotation, the default from the model, the help text from
the field's docstring.

Building a pydantic model class costs ~100 ms of start-up, too much for ``--help``, so
the options are derived ahead of time: ``_option_derive.derive_table()`` computes each
field's ``OptionSpec`` from the models, and the result is committed as plain literals in
``_option_table.py`` (a test checks that it matches the models). Regenerate it after
changing a model::

    python -m gamut_eval.cli._option_derive --write

``model_options("JudgeSettings")`` adds the options of a model to a command, from the
table; ``model_values`` takes the parsed values back out of the command's keyword
arguments, and ``settings_from`` has the model validate them when the command runs (so a
bound is enforced in one place, with one message). ``--config FILE`` supplies values from
a YAML or JSON file; options given on the command line win over it, and it wins over the
model's defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

from gamut_eval.cli._option_table import OPTION_TABLE
from gamut_eval.errors import ValidationError

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

    M = TypeVar("M", bound=BaseModel)

__all__ = [
    "OptionSpec",
    "config_option",
    "model_options",
    "model_values",
    "option_name",
    "option_table",
    "settings_from",
]

F = TypeVar("F", bound=Callable[..., Any])


class OptionSpec(NamedTuple):
    """One field of a settings model as a command-line option."""

    name: str
    """The field (and the command's keyword argument)."""
    flag: str
    """The long option, ``--field-name`` unless the field's ``cli`` metadata names another."""
    kind: str
    """int, float, str, path, bool (``--x/--no-x``), choice or multiple (repeatable)."""
    default: Any
    """The model's default."""
    help: str
    """The field's docstring, on one line."""
    bounds: dict[str, Any]
    """``min``, ``max``, ``min_open``, ``max_open`` of an int or float."""
    choices: tuple[str, ...]
    """The values of a choice."""


def option_table() -> dict[str, tuple[OptionSpec, ...]]:
    """The committed table: model name -> its options, in field order."""
    return {model: _specs(model) for model in OPTION_TABLE}


def _specs(model: str) -> tuple[OptionSpec, ...]:
    try:
        entries = OPTION_TABLE[model]
    except KeyError:
        raise KeyError(f"{model} is not one of {', '.join(OPTION_TABLE)}") from None
    return tuple(OptionSpec(**entry) for entry in entries)


# -- the options, from the table ------------------------------------------------------------


def _option(spec: OptionSpec, choices: Iterable[str] | None, prefix: str) -> Callable[[F], F]:
    dest = prefix + spec.name
    declarations = [spec.flag, dest]
    kind: dict[str, Any]
    if choices is not None:
        kind = {"type": click.Choice(list(choices))}
    elif spec.kind == "choice":
        kind = {"type": click.Choice(list(spec.choices))}
    elif spec.kind == "bool":
        kind = {}
        declarations = [f"{spec.flag}/--no-{spec.flag.removeprefix('--')}", dest]
    elif spec.kind == "int":
        kind = {"type": click.IntRange(**spec.bounds) if spec.bounds else click.INT}
    elif spec.kind == "float":
        kind = {"type": click.FloatRange(**spec.bounds) if spec.bounds else click.FLOAT}
    elif spec.kind == "path":
        kind = {"type": click.Path(path_type=Path)}
    elif spec.kind == "multiple":
        kind = {"multiple": True, "type": click.STRING}
    else:
        kind = {"type": click.STRING}
    default = spec.default
    return click.option(
        *declarations,
        default=None if default == () else default,
        show_default=default is not None and default != (),
        help=spec.help,
        **kind,
    )


def model_options(
    model: str,
    *,
    exclude: Iterable[str] = (),
    choices: Mapping[str, Iterable[str]] | None = None,
    prefix: str = "",
) -> Callable[[F], F]:
    """A decorator adding one option per field of the settings model named ``model`` (in
    field order) to a command.

    ``exclude`` leaves fields out; ``choices`` narrows a field's choices for this command;
    ``prefix`` starts each keyword argument's name (``generation_temperature``), for a
    command with two models that have a field of the same name (give ``model_values``
    the same prefix).
    """
    skip = set(exclude)
    narrowed = choices or {}
    decorators = [
        _option(spec, narrowed.get(spec.name), prefix)
        for spec in _specs(model)
        if spec.name not in skip
    ]

    def decorate(command: F) -> F:
        # click.option() prepends: apply in reverse so the help lists fields in order
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return decorate


def model_values(model: str, options: dict[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """Remove the fields of the settings model named ``model`` from a command's keyword
    arguments (named ``prefix`` + field); return them by field (only those given: ``None``
    and empty repeats keep the model's default)."""
    values: dict[str, Any] = {}
    for spec in _specs(model):
        if prefix + spec.name not in options:
            continue
        value = options.pop(prefix + spec.name)
        if value is None or value == ():
            continue
        values[spec.name] = tuple(value) if isinstance(value, list | tuple) else value
    return values


def settings_from(
    model: type[M], values: Mapping[str, Any], *, where: str = "command-line options"
) -> M:
    """Validate settings, naming ``where`` the values came from in the error."""
    import pydantic

    from gamut_eval.rubric import pydantic_details

    try:
        return model.model_validate(dict(values))
    except pydantic.ValidationError as exc:
        raise ValidationError([d.in_file(where) for d in pydantic_details(exc)]) from None


def _load_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """``--config``: the file's values become the command's defaults (flags still win)."""
    if value is None:
        return None
    from gamut_eval._files import read_document
    from gamut_eval.errors import ErrorDetail

    data = read_document(value)
    if not isinstance(data, dict):
        raise ValidationError(
            [ErrorDetail("$", "mapping", "a config file holds option names and values", data)]
        )
    names: dict[str, str] = {}
    options = [
        p for p in ctx.command.params if isinstance(p, click.Option) and p.name and p.expose_value
    ]
    for param in options:  # keyword names first: a long option of that name wins over one
        names[str(param.name).replace("_", "-")] = str(param.name)
    for param in options:
        for option in param.opts:
            names[option.removeprefix("--").replace("_", "-")] = str(param.name)
    unknown = sorted(str(k) for k in data if str(k).replace("_", "-") not in names)
    if unknown:
        rule = "not an option of this command"
        details = [ErrorDetail(k, "known-option", rule, k).in_file(str(value)) for k in unknown]
        raise ValidationError(details)
    given = {names[str(k).replace("_", "-")]: v for k, v in data.items()}
    ctx.default_map = {**(ctx.default_map or {}), **given}
    return value


config_option = click.option(
    "--config",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    is_eager=True,
    expose_value=False,
    callback=_load_config,
    help="YAML or JSON file of option values (names as the long options, without --); "
    "options on the command line win over it.",
)


# -- deriving the table (``_option_derive``) ------------------------------------------------


def option_name(name: str, info: FieldInfo) -> str | None:
    """The option of field ``name`` (``--field-name`` unless its metadata says otherwise);
    None for a field kept off the command line."""
    extra = info.json_schema_extra
    if isinstance(extra, Mapping) and "cli" in extra:
        value = extra["cli"]
        return value if isinstance(value, str) else None
    return "--" + name.replace("_", "-")
