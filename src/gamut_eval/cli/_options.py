"""Command-line options derived from settings models: one source for every default.

Each field of a settings model (``JudgeSettings``, ``BatchSettings``, ``RaySettings``,
``GenerationSettings``) is an option: the name from the field (or its ``cli`` metadata),
the type and bounds from its annotation, the default from the model, the help text from
the field's docstring. The options are read from the model's ``model_fields`` when the
module of a command that takes them is imported: ``gamut --help`` imports no command
module, so it builds no model.

``model_options(JudgeSettings)`` adds the options of a model to a command;
``model_values`` takes the parsed values back out of the command's keyword arguments, and
``settings_from`` has the model validate them when the command runs (so a bound is
enforced in one place, with one message). ``--config FILE`` supplies values from a YAML or
JSON file; options given on the command line win over it, and it wins over the model's
defaults.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gamut_eval.cli._common import option_stack
from gamut_eval.errors import ValidationError

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

    M = TypeVar("M", bound=BaseModel)

F = TypeVar("F", bound=Callable[..., Any])


def option_name(name: str, info: FieldInfo) -> str | None:
    """The option of field ``name`` (``--field-name`` unless its metadata says otherwise);
    None for a field kept off the command line."""
    extra = info.json_schema_extra
    if isinstance(extra, Mapping) and "cli" in extra:
        value = extra["cli"]
        return value if isinstance(value, str) else None
    return "--" + name.replace("_", "-")


def _bounds(metadata: Iterable[Any]) -> dict[str, Any]:
    """``min``, ``max``, ``min_open``, ``max_open`` of an int or float, for click's ranges."""
    import annotated_types

    bounds: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            bounds["min"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            bounds["min"], bounds["min_open"] = item.gt, True
        elif isinstance(item, annotated_types.Le):
            bounds["max"] = item.le
        elif isinstance(item, annotated_types.Lt):
            bounds["max"], bounds["max_open"] = item.lt, True
    return bounds


def _bare_type(info: FieldInfo) -> tuple[Any, dict[str, Any]]:
    """The field's type without ``None``, and its bounds (also from an ``Annotated`` inside
    an Optional)."""
    from pydantic.fields import FieldInfo

    annotation = info.annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            annotation = args[0]
    bounds = _bounds(info.metadata)
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *extras = typing.get_args(annotation)
        for extra in extras:
            if isinstance(extra, FieldInfo):
                bounds |= _bounds(extra.metadata)
    return annotation, bounds


def _help_of_choices(text: str, every: Iterable[Any], kept: Iterable[str]) -> str:
    """A field's help without the parts (``name: what it does``, separated by ``;``) that
    describe choices this command does not offer."""
    left_out = {str(c) for c in every} - set(kept)
    parts = [p.strip() for p in text.split(";")]
    return "; ".join(p for p in parts if p.split(":", 1)[0].strip() not in left_out)


def _option(
    flag: str, dest: str, info: FieldInfo, choices: Iterable[str] | None
) -> Callable[[F], F]:
    """The click option of one field: its type from the annotation, default and help from
    the model."""
    annotation, bounds = _bare_type(info)
    help_text = (info.description or "").replace("\n", " ")
    if choices is not None and typing.get_origin(annotation) is typing.Literal:
        help_text = _help_of_choices(help_text, typing.get_args(annotation), choices)
    declarations = [flag, dest]
    kind: dict[str, Any]
    if choices is not None:
        kind = {"type": click.Choice(list(choices))}
    elif typing.get_origin(annotation) is typing.Literal:
        kind = {"type": click.Choice([str(a) for a in typing.get_args(annotation)])}
    elif annotation is bool:
        kind = {}
        declarations = [f"{flag}/--no-{flag.removeprefix('--')}", dest]
    elif annotation is int:
        kind = {"type": click.IntRange(**bounds) if bounds else click.INT}
    elif annotation is float:
        kind = {"type": click.FloatRange(**bounds) if bounds else click.FLOAT}
    elif annotation is Path:
        kind = {"type": click.Path(path_type=Path)}
    elif typing.get_origin(annotation) is tuple:
        kind = {"multiple": True, "type": click.STRING}
    else:
        kind = {"type": click.STRING}
    default = info.get_default(call_default_factory=True)
    return click.option(
        *declarations,
        default=None if default == () else default,
        show_default=default is not None and default != (),
        help=help_text,
        **kind,
    )


def _fields(model: type[BaseModel]) -> Iterable[tuple[str, str, FieldInfo]]:
    """(field, option, info) of each field of ``model`` that is on the command line."""
    for name, info in model.model_fields.items():
        flag = option_name(name, info)
        if flag is not None:
            yield name, flag, info


def model_options(
    model: type[BaseModel],
    *,
    exclude: Iterable[str] = (),
    choices: Mapping[str, Iterable[str]] | None = None,
    prefix: str = "",
) -> Callable[[F], F]:
    """A decorator adding one option per field of the settings ``model`` (in field order)
    to a command.

    ``exclude`` leaves fields out; ``choices`` narrows a field's choices for this command;
    ``prefix`` starts each keyword argument's name (``generation_temperature``), for a
    command with two models that have a field of the same name (give ``model_values``
    the same prefix).
    """
    skip = set(exclude)
    narrowed = choices or {}
    return option_stack(
        *(
            _option(flag, prefix + name, info, narrowed.get(name))
            for name, flag, info in _fields(model)
            if name not in skip
        )
    )


def model_values(
    model: type[BaseModel], options: dict[str, Any], *, prefix: str = ""
) -> dict[str, Any]:
    """Remove the fields of the settings ``model`` from a command's keyword arguments
    (named ``prefix`` + field); return them by field (only those given: ``None`` and empty
    repeats keep the model's default)."""
    values: dict[str, Any] = {}
    for name, _, _ in _fields(model):
        value = options.pop(prefix + name, None)
        if value is None or value == ():
            continue
        values[name] = tuple(value) if isinstance(value, list | tuple) else value
    return values


def settings_from(model: type[M], values: Mapping[str, Any]) -> M:
    """Validate settings; an error names the command-line options as their source."""
    import pydantic

    from gamut_eval.rubric import pydantic_details

    try:
        return model.model_validate(dict(values))
    except pydantic.ValidationError as exc:
        details = [d.in_file("command-line options") for d in pydantic_details(exc)]
        raise ValidationError(details) from None


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
    options = [
        p for p in ctx.command.params if isinstance(p, click.Option) and p.name and p.expose_value
    ]
    # keyword names first: a long option of that name wins over one
    names = {str(p.name).replace("_", "-"): str(p.name) for p in options}
    names |= {o.removeprefix("--").replace("_", "-"): str(p.name) for p in options for o in p.opts}
    unknown = sorted(str(k) for k in data if str(k).replace("_", "-") not in names)
    if unknown:
        from gamut_eval.cli._main import did_you_mean

        details = [
            ErrorDetail(
                k,
                "known-option",
                "not an option of this command." + did_you_mean(k.replace("_", "-"), names),
                k,
            ).in_file(str(value))
            for k in unknown
        ]
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
