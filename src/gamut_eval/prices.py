"""The price table (``--prices``): what a model's tokens cost, for ``gamut build``, ``gamut
run`` (the cost in ``run.json``) and ``gamut run/judge --dry-run``. One format, read by one
loader (the format in full: docs/scaling.md, "The price table")::

    currency: USD            # display only; no conversion is done (a build takes USD only)
    models:                  # keyed by model or judge as passed, or by its model name
      openai/gpt-4.1-mini:   # prices per million tokens
        input: 0.40
        cached_input: 0.10   # prompt tokens served from the provider's prefix cache
        output: 1.60
        batch_input: 0.20    # the provider's batch API
        batch_output: 0.80
      anthropic/claude-sonnet-4-5:
        input: 3.00
        cached_input: 0.30
        cache_write_input: 3.75   # prompt tokens written to the cache (Anthropic: 1.25x)
        output: 15.00

A plain map of model names to prices (no ``currency`` and no ``models`` key) is read as
the ``models`` of a USD table::

    anthropic/claude-sonnet-4-5: {input: 3.0, output: 15.0, cached_input: 0.3}

Prices change and differ by account, so the project ships none and never builds one in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gamut_eval._files import read_document
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import pydantic_details

__all__ = ["ModelPrice", "PriceTable", "load_prices"]

_PER = 1_000_000
_KEYS = frozenset({"currency", "models"})
_FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

_Price = Annotated[float, Field(ge=0)]


class ModelPrice(BaseModel):
    """One model's prices, per million tokens."""

    model_config = _FROZEN

    input: _Price
    """Standard prompt tokens."""
    output: _Price
    """Completion tokens."""
    cached_input: _Price | None = None
    """Prompt tokens served from the provider's prefix cache (default: the input price)."""
    batch_input: _Price | None = None
    """Prompt tokens through the provider's batch API."""
    batch_output: _Price | None = None
    """Completion tokens through the provider's batch API."""
    cache_write_input: _Price | None = None
    """Prompt tokens written to the provider's cache, where it bills them apart (Anthropic:
    1.25x the input price for its 5-minute cache; default: the input price)."""
    min_cached_tokens: Annotated[int, Field(ge=0)] | None = None
    """Prompts shorter than this are never served from the cache, for the dry run's
    estimate (default: the minimum the judge's provider documents for the model, 0 for
    a judge whose provider documents none)."""

    def cost(self, input: int, cached_input: int, output: int, cache_write_input: int = 0) -> float:
        """What these tokens cost at standard prices; ``cached_input`` and
        ``cache_write_input`` (both part of ``input``) at the cached and cache-write prices."""
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write_input is None else self.cache_write_input
        fresh = input - cached_input - cache_write_input
        billed = fresh * self.input + cached_input * cached_rate + cache_write_input * write_rate
        return (billed + output * self.output) / _PER


def _is_flat(data: Any) -> bool:
    """Whether ``data`` is the plain form: a map of model names with no table keys."""
    return isinstance(data, dict) and not (_KEYS & data.keys())


class PriceTable(BaseModel):
    """A user-supplied price table (``--prices prices.yaml``)."""

    model_config = _FROZEN

    currency: str = "USD"
    """Shown next to costs; no conversion is done."""
    models: dict[str, ModelPrice]
    """Prices keyed by model or judge (``openai/gpt-4.1-mini``) or by model name
    (``gpt-4.1-mini``)."""

    @model_validator(mode="before")
    @classmethod
    def _plain_map(cls, data: Any) -> Any:
        """A plain map of model names to prices is the ``models`` of a USD table."""
        return {"currency": "USD", "models": data} if _is_flat(data) else data

    def lookup(self, name: str) -> tuple[str, ModelPrice] | None:
        """The entry for ``name``: its full name first, then shorter tails of it
        (``openai/gpt-4.1-mini``, then ``gpt-4.1-mini``)."""
        parts = name.split("/")
        for start in range(len(parts)):
            tail = "/".join(parts[start:])
            if tail in self.models:
                return tail, self.models[tail]
        return None


def load_prices(path: str | Path | None, *, currency: str | None = None) -> PriceTable:
    """The price table at ``path`` (YAML or JSON), or an empty USD table without one.
    ``currency``: the only currency taken (a build's costs are USD, as providers report
    them). Every problem is reported with the file, the field and the value found."""
    if path is None:
        return PriceTable(models={})
    data = read_document(path)
    try:
        table = PriceTable.model_validate(data)
    except pydantic.ValidationError as exc:
        details = pydantic_details(exc)
        if _is_flat(data):  # say where the problem is in the file as written
            details = [_unnest(d) for d in details]
        raise ValidationError([d.in_file(path) for d in details]) from None
    if currency is not None and table.currency != currency:
        message = f"must be {currency} here: costs are not converted"
        detail = ErrorDetail("currency", "currency", message, table.currency)
        raise ValidationError([detail.in_file(path)])
    return table


def _unnest(detail: ErrorDetail) -> ErrorDetail:
    path = detail.path.removeprefix("models.")
    return ErrorDetail(path, detail.rule, detail.message, detail.value, detail.file)
