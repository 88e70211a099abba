"""Public names of a package imported on first use (PEP 562 module ``__getattr__``).

A package lists its public names once, as ``from MODULE import NAME as NAME`` lines under
``if TYPE_CHECKING:`` (what type checkers and readers see), and calls
``lazy_exports(globals())``: the lines are read back from the package's own source, and
each name's module is imported when the name is first used, so ``from package import name``
works as usual while importing the package alone loads nothing heavy. ``__all__`` is
those names and the public names the package defines or imports eagerly.
"""

from __future__ import annotations

import ast
import importlib
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def type_checking_names(source: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, name there)`` of the ``from MODULE import ...`` lines under the
    module-level ``if TYPE_CHECKING:`` blocks of ``source``."""
    names: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for line in node.body:
            if isinstance(line, ast.ImportFrom) and line.module and not line.level:
                for alias in line.names:
                    names[alias.asname or alias.name] = (line.module, alias.name)
    return names


def lazy_exports(
    namespace: dict[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package whose globals are ``namespace``; sets its
    ``__all__``."""
    package = namespace["__name__"]
    names = type_checking_names(Path(namespace["__file__"]).read_text(encoding="utf-8"))
    eager = {
        name
        for name, value in namespace.items()
        if not name.startswith("_")
        and name != "annotations"
        and not isinstance(value, types.ModuleType)
    }
    if "__version__" in namespace:
        eager.add("__version__")
    namespace["__all__"] = sorted(eager | set(names))

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[0]), where[1])
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
