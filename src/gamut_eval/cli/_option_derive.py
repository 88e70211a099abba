"""The option table, derived from the settings models, and written as Python source.

``derive_table()`` computes every option of the settings models (``SETTINGS_MODELS``):
name, flag (``option_name``), kind, bounds, choices, default, help text. The command line
reads the same data from ``_option_table.py``, the committed result, so ``--help`` builds
no pydantic model. After changing a model, regenerate the table::

    python -m gamut_eval.cli._option_derive --write

(``--check`` exits 1 if the committed table is out of date; the tests check it too.)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval.cli._options import OptionSpec, option_name

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

__all__ = ["REGENERATE", "SETTINGS_MODELS", "TABLE_FILE", "derive_table", "main", "render_table"]

_JUDGE_SETTINGS = "gamut_eval.judge._settings"
SETTINGS_MODELS = {
    "JudgeSettings": _JUDGE_SETTINGS,
    "BatchSettings": _JUDGE_SETTINGS,
    "RaySettings": _JUDGE_SETTINGS,
    "GenerationSettings": "gamut_eval.generate._settings",
}
"""The settings models whose fields are options: class name -> the module that holds it."""
REGENERATE = "python -m gamut_eval.cli._option_derive --write"
"""The command that rewrites ``_option_table.py`` from the models."""
TABLE_FILE = Path(__file__).with_name("_option_table.py")


def _bounds(info: FieldInfo) -> dict[str, Any]:
    import annotated_types

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
    import types
    import typing

    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _bounds_of(annotation: Any, info: FieldInfo) -> tuple[Any, dict[str, Any]]:
    """The bare type, and bounds from the field or from an ``Annotated`` inside Optional."""
    import typing

    from pydantic.fields import FieldInfo

    bounds = _bounds(info)
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        for extra in extras:
            if isinstance(extra, FieldInfo):
                bounds |= _bounds(extra)
        return base, bounds
    return annotation, bounds


def _kind(info: FieldInfo) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """The kind of option a field is, its bounds and its choices."""
    from typing import Literal, get_args, get_origin

    annotation, bounds = _bounds_of(_strip_optional(info.annotation), info)
    if get_origin(annotation) is Literal:
        return "choice", {}, tuple(str(a) for a in get_args(annotation))
    if annotation is bool:
        return "bool", {}, ()
    if annotation is int:
        return "int", bounds, ()
    if annotation is float:
        return "float", bounds, ()
    if annotation is Path:
        return "path", {}, ()
    if get_origin(annotation) is tuple:
        return "multiple", {}, ()
    return "str", {}, ()


def _derive(model: type[BaseModel]) -> tuple[OptionSpec, ...]:
    specs = []
    for name, info in model.model_fields.items():
        flag = option_name(name, info)
        if flag is None:
            continue
        kind, bounds, choices = _kind(info)
        specs.append(
            OptionSpec(
                name=name,
                flag=flag,
                kind=kind,
                default=info.get_default(call_default_factory=True),
                help=(info.description or "").replace("\n", " "),
                bounds=bounds,
                choices=choices,
            )
        )
    return tuple(specs)


def derive_table() -> dict[str, tuple[OptionSpec, ...]]:
    """The options of every settings model, derived from the models now."""
    import importlib

    return {
        model: _derive(getattr(importlib.import_module(module), model))
        for model, module in SETTINGS_MODELS.items()
    }


# -- writing the table ----------------------------------------------------------------------

_HEADER = f'''"""The options of the settings models, as plain literals. GENERATED: do not edit.

Derived from {", ".join(SETTINGS_MODELS)}
(``{"``, ``".join(dict.fromkeys(SETTINGS_MODELS.values()))}``)
by ``gamut_eval.cli._option_derive.derive_table``, so
``gamut <command> --help`` builds no pydantic model; a test checks it matches the models.
Regenerate after changing a model: ``{REGENERATE}``
"""'''
_WIDTH = 100


def _literal(value: Any) -> str:
    """Python source for a literal value (strings in double quotes, as the formatter has)."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):
        items = [_literal(item) for item in value]
        return "(" + (items[0] + "," if len(items) == 1 else ", ".join(items)) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a literal the option table can hold: {value!r}")


def _entry_lines(key: str, value: Any, indent: int) -> list[str]:
    pad = " " * indent
    line = f"{pad}{_literal(key)}: {_literal(value)},"
    if len(line) <= _WIDTH or not isinstance(value, str):
        return [line]
    # a long string: implicit concatenation in parentheses, split after spaces
    inner = " " * (indent + 4)
    words = value.split(" ")
    parts, current = [], words[0]
    for word in words[1:]:
        candidate = f"{current} {word}"
        if len(inner + _literal(candidate + " ")) > _WIDTH:
            parts.append(current + " ")
            current = word
        else:
            current = candidate
    parts.append(current)
    return [f"{pad}{_literal(key)}: (", *(inner + _literal(p) for p in parts), f"{pad}),"]


def render_table(table: Mapping[str, Iterable[OptionSpec]]) -> str:
    """The source of ``_option_table.py`` for ``table``."""
    lines = [
        _HEADER,
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "OPTION_TABLE: dict[str, tuple[dict[str, Any], ...]] = {",
    ]
    for model, specs in table.items():
        lines.append(f"    {_literal(model)}: (")
        for spec in specs:
            lines.append("        {")
            for key, value in spec._asdict().items():
                lines += _entry_lines(key, value, 12)
            lines.append("        },")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``--write`` rewrites the table from the models; ``--check`` exits 1 if it is stale."""
    args = sys.argv[1:] if argv is None else argv
    if args not in (["--write"], ["--check"]):
        print("usage: python -m gamut_eval.cli._option_derive --write | --check", file=sys.stderr)
        return 2
    text = render_table(derive_table())
    if args == ["--check"]:
        current = TABLE_FILE.read_text(encoding="utf-8") if TABLE_FILE.exists() else ""
        if current != text:
            print(f"{TABLE_FILE} is out of date: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    TABLE_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
