"""Report tables: typed rows, the unit each number is in, and how a cell is displayed.

Every table of a report is a list of rows of one Pydantic model, so the JSON keys are the
field names and each is documented by its docstring. Numbers are stored on their natural
scale (scores in [-1, 1], rates in [0, 1]); the ``Unit`` attached to a field type says how
Markdown, HTML and the terminal show it (scores x100, rates as percentages), so the three
renderings cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict


@dataclass(frozen=True)
class Unit:
    """How a column's numbers are displayed (stored values are never rescaled)."""

    kind: Literal["score", "rate", "stat", "count"]


Score = Annotated[float | None, Unit("score")]
"""A Gamut score or a difference of scores, on the raw scale (shown x100)."""
Rate = Annotated[float | None, Unit("rate")]
"""A share in [0, 1] (shown as a percentage)."""
Stat = Annotated[float | None, Unit("stat")]
"""A coefficient such as tau, kappa, alpha or a correlation (shown with 3 decimals)."""
Count = Annotated[int, Unit("count")]
"""A count of questions, responses, checks or models."""


class Row(BaseModel):
    """Base of every table row: frozen, no unknown keys, a docstring per field."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


@dataclass(frozen=True)
class TableSpec:
    """One table of a report: its JSON key (and file name), title, and row model."""

    name: str
    title: str
    row: type[Row]
    description: str


def number(value: Any) -> float | None:
    """A float for a table cell; NaN (an undefined statistic) becomes ``None`` (JSON null)."""
    result = float(value)
    return None if math.isnan(result) else result


def estimate(name: str, value: Any, low: Any, high: Any) -> dict[str, float | None]:
    """A statistic and its interval as the cells ``name``, ``name_low`` and ``name_high``."""
    return {name: number(value), f"{name}_low": number(low), f"{name}_high": number(high)}


def column_units(row: type[Row]) -> dict[str, str]:
    """Field name -> unit kind, for the fields whose type carries a ``Unit``."""
    units: dict[str, str] = {}
    for name, field in row.model_fields.items():
        for meta in field.metadata:
            if isinstance(meta, Unit):
                units[name] = meta.kind
    return units


def format_cell(value: Any, unit: str | None = None) -> str:
    """Display text of one cell: an em dash for a missing value, units applied."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit == "score":
        return f"{100 * value:.1f}"
    if unit == "rate":
        return f"{100 * value:.1f}%"
    if unit == "stat":
        return f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "; ".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Column:
    """A displayed column: a field, its unit, and whether ``<name>_low``/``_high`` exist
    (then the interval is shown in the same cell, not in columns of its own)."""

    name: str
    unit: str | None
    interval: bool

    @property
    def header(self) -> str:
        return self.name.replace("_", " ")


def display_columns(row: type[Row], drop: tuple[str, ...] = ()) -> list[Column]:
    """The columns shown for a row model: interval bounds fold into their value column."""
    units = column_units(row)
    names = list(row.model_fields)
    bounds = {f"{n}_low" for n in names} | {f"{n}_high" for n in names}
    return [
        Column(n, units.get(n), f"{n}_low" in names and f"{n}_high" in names)
        for n in names
        if n not in bounds and n not in drop
    ]


def cell_text(row: Row, column: Column) -> tuple[str, str]:
    """(value, interval) display texts of one cell; the interval is "" when there is none."""
    value = format_cell(getattr(row, column.name), column.unit)
    if not column.interval:
        return value, ""
    low = getattr(row, f"{column.name}_low")
    high = getattr(row, f"{column.name}_high")
    if low is None or high is None:
        return value, ""
    return value, f"[{format_cell(low, column.unit)}, {format_cell(high, column.unit)}]"
