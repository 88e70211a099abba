"""The one exception hierarchy of gamut-eval.

    GamutError
     +-- InputError            bad input from a user: the CLI prints it and exits 2
     |    +-- ValidationError  one or more problems found in one file, all reported together
     +-- JudgeError            a judge backend could not be used at all (e.g. bad credentials)

Every message names the file, the path inside it, the rule and the value found.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LISTED",
    "ErrorDetail",
    "GamutError",
    "InputError",
    "JudgeError",
    "ValidationError",
    "json_path",
    "render_details",
]

_MAX_VALUE_CHARS = 80
LISTED = 5
"""How many problems of one kind a message lists before it gives only their count."""


def json_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """Render a location such as ``("items", 2, "min_required")`` as ``items[2].min_required``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "$"


def show_value(value: Any) -> str:
    """A short, single-line rendering of an offending value for error messages. Only as
    much of the value as the message shows is rendered: a value of millions of items, or
    nested thousands deep, costs no more than a short one."""
    text = _json_head(value, _MAX_VALUE_CHARS + 1)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def _json_head(value: Any, budget: int) -> str:
    """The start of ``value`` as JSON, at least ``budget`` characters of it when it is that
    long: lists and objects are rendered item by item until the budget is spent, strings
    are cut before they are quoted."""
    if isinstance(value, list | tuple | dict):
        pairs = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        text = opening
        for index, (key, item) in enumerate(pairs):
            if len(text) >= budget:
                return text
            if index:
                text += ", "
            if isinstance(value, dict):
                text += _json_head(str(key), budget - len(text)) + ": "
            text += _json_head(item, budget - len(text))
        return text + closing
    if isinstance(value, str):
        value = value[: max(budget, 0) + 1]
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)[: max(budget, 0) + 1]


_MISSING: Any = object()


@dataclass(frozen=True)
class ErrorDetail:
    """One problem in one input file."""

    path: str
    """JSON path inside the document, e.g. ``items[2].min_required``."""
    rule: str
    """Short machine-readable rule name, e.g. ``threshold-range``."""
    message: str
    """What is expected, in words, and how to fix it."""
    value: Any = _MISSING
    """The value found (omitted when the field is absent)."""
    file: str | None = None
    """The file the problem is in, when known."""

    def render(self) -> str:
        where = f"{self.file}:{self.path}" if self.file else self.path
        found = "" if self.value is _MISSING else f" (found: {show_value(self.value)})"
        return f"{where}: {self.message} [{self.rule}]{found}"

    def in_file(self, file: str | Path | None, prefix: str = "") -> ErrorDetail:
        """The same problem located in ``file``, with ``prefix`` put before its path."""
        path = self.path
        if prefix and path == "$":
            path = prefix
        elif prefix:
            path = prefix + path if path.startswith("[") else f"{prefix}.{path}"
        return ErrorDetail(
            path, self.rule, self.message, self.value, str(file) if file else self.file
        )


class GamutError(Exception):
    """Base class of every error gamut-eval raises on purpose.

    ``setting``: the setting whose value is at fault or is the fix, when one is (a
    settings model's field or a function's parameter, e.g. ``max_unscored_rate``), or
    several of them, the one at fault first. The library names the settings and their
    values; the command line adds the options that set them."""

    settings: tuple[str, ...] = ()
    """Every setting the message names as at fault or as the fix."""

    def __init__(self, *args: object, setting: str | Sequence[str] | None = None) -> None:
        super().__init__(*args)
        if setting is not None:
            self.settings = (setting,) if isinstance(setting, str) else tuple(setting)

    @property
    def setting(self) -> str | None:
        """The setting at fault (the first of ``settings``), if any."""
        return self.settings[0] if self.settings else None


class InputError(GamutError):
    """The user's input cannot be used. The CLI prints the message and exits with code 2."""


def _kind(detail: ErrorDetail) -> tuple[str, str]:
    """What makes two problems the same one in different places: the rule, and the message
    without its numbers (a line number, a count)."""
    return detail.rule, re.sub(r"\d+", "#", detail.message)


def render_details(details: Sequence[ErrorDetail]) -> list[str]:
    """One line per problem, except that a problem repeated in more than ``LISTED`` places
    is one line with its count followed by the first ``LISTED`` places: a file broken the
    same way on every row gives six lines, never one per row."""
    counts = Counter(_kind(d) for d in details)
    shown: Counter[tuple[str, str]] = Counter()
    lines = []
    for detail in details:
        kind = _kind(detail)
        if counts[kind] > LISTED and not shown[kind]:
            file = (detail.file or "").rsplit(":", 1)[0] if detail.file else None
            where = (
                f"{file}: "
                if file
                and all((d.file or "").startswith(file) for d in details if _kind(d) == kind)
                else ""
            )
            lines.append(
                f"{where}{counts[kind]:,} places break the same rule [{detail.rule}]; "
                f"the first {LISTED}:"
            )
        if shown[kind] < LISTED:
            lines.append(detail.render())
        shown[kind] += 1
    return lines


class ValidationError(InputError):
    """A document broke one or more rules; ``details`` lists every problem, not only the
    first. The message gives a problem repeated in many places as its count and the first
    ``LISTED`` (``render_details``)."""

    def __init__(
        self, details: list[ErrorDetail], *, setting: str | Sequence[str] | None = None
    ) -> None:
        self.details = list(details)
        super().__init__("\n".join(render_details(self.details)), setting=setting)


class JudgeError(GamutError):
    """A judge backend cannot be used at all (for example, rejected credentials)."""
