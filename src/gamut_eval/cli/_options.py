"""Command-line options derived from settings models: one source for every default.

``model_options(JudgeSettings)`` turns each field of a pydantic settings model into a
click option: the name from the field (or its ``cli`` metadata), the type and bounds from
its annotation, the default from the model, the help text from the field's docstring.
``model_values`` takes the parsed values back out of a command's keyword arguments, and
the model validates them (so a bound is enforced in one place, with one message).
``--config FILE`` supplies values from a YAML or JSON file; options given on the command
line win over it, and it wins over the model's defaults.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

import annotated_types
import click
import pydantic
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gamut_eval.errors import ValidationError

__all__ = ["config_option", "model_options", "model_values", "option_name", "settings_from"]

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)


def option_name(name: str, info: FieldInfo) -> str | None:
    """The option of field ``name`` (``--field-name`` unless its metadata says otherwise);
    None for a field kept off the command line."""
    extra = info.json_schema_extra
    if isinstance(extra, Mapping) and "cli" in extra:
        value = extra["cli"]
        return value if isinstance(value, str) else None
    return "--" + name.replace("_", "-")


def _bounds(info: FieldInfo) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            bounds["min"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            bounds["min"], bounds["min_open"] = item.gt, True
        elif isinstance(item, annotated_types.Le):
            bounds["max"] = item.le
        elif isinstance(item, annotated_types.Lt):
            bounds["max"], bounds["max_open"] = item.lt, True
    return bounds


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _bounds_of(annotation: Any, info: FieldInfo) -> tuple[Any, dict[str, Any]]:
    """The bare type, and bounds from the field or from an ``Annotated`` inside Optional."""
    bounds = _bounds(info)
    if get_origin(annotation) is typing.Annotated:
        base, *extras = get_args(annotation)
        for extra in extras:
            if isinstance(extra, FieldInfo):
                bounds |= _bounds(extra)
        return base, bounds
    return annotation, bounds


def _click_type(annotation: Any, info: FieldInfo, choices: Iterable[str] | None) -> dict[str, Any]:
    annotation, bounds = _bounds_of(_strip_optional(annotation), info)
    if choices is not None:
        return {"type": click.Choice(list(choices))}
    if get_origin(annotation) is Literal:
        return {"type": click.Choice([str(a) for a in get_args(annotation)])}
    if annotation is bool:
        return {"is_flag": True}
    if annotation is int:
        return {"type": click.IntRange(**bounds) if bounds else click.INT}
    if annotation is float:
        return {"type": click.FloatRange(**bounds) if bounds else click.FLOAT}
    if annotation is Path:
        return {"type": click.Path(path_type=Path)}
    if get_origin(annotation) is tuple:
        return {"multiple": True, "type": click.STRING}
    return {"type": click.STRING}


def _option(
    name: str, info: FieldInfo, flag: str, choices: Iterable[str] | None
) -> Callable[[F], F]:
    kind = _click_type(info.annotation, info, choices)
    default = info.get_default(call_default_factory=True)
    declarations = [flag, name]
    if kind.pop("is_flag", False):
        declarations = [f"{flag}/--no-{flag.removeprefix('--')}", name]
    shown = default is not None and default != ()
    return click.option(
        *declarations,
        default=None if default == () else default,
        show_default=shown,
        help=(info.description or "").replace("\n", " "),
        **kind,
    )


def model_options(
    model: type[BaseModel],
    *,
    exclude: Iterable[str] = (),
    choices: Mapping[str, Iterable[str]] | None = None,
) -> Callable[[F], F]:
    """A decorator adding one option per field of ``model`` (in field order) to a command.

    ``exclude`` leaves fields out; ``choices`` narrows a field's choices for this command.
    """
    skip = set(exclude)
    narrowed = choices or {}
    decorators = [
        _option(name, info, flag, narrowed.get(name))
        for name, info in model.model_fields.items()
        if (flag := option_name(name, info)) is not None and name not in skip
    ]

    def decorate(command: F) -> F:
        # click.option() prepends: apply in reverse so the help lists fields in order
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return decorate


def model_values(model: type[BaseModel], options: dict[str, Any]) -> dict[str, Any]:
    """Remove ``model``'s fields from a command's keyword arguments; return them (only
    those given: ``None`` and empty repeats keep the model's default)."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if option_name(name, info) is None or name not in options:
            continue
        value = options.pop(name)
        if value is None or value == ():
            continue
        values[name] = tuple(value) if isinstance(value, list | tuple) else value
    return values


def settings_from(
    model: type[M], values: Mapping[str, Any], *, where: str = "command-line options"
) -> M:
    """Validate settings, naming ``where`` the values came from in the error."""
    from gamut_eval.rubric._load import pydantic_details

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
    for param in ctx.command.params:
        if isinstance(param, click.Option) and param.name and param.expose_value:
            for option in (*param.opts, param.name):
                names[option.removeprefix("--").replace("_", "-")] = param.name
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
