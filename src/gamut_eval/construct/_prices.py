"""An optional price table: what a model's tokens cost, to put a figure on a build.

A YAML or JSON file mapping Inspect model names to prices in USD per million tokens:

    anthropic/claude-sonnet-4-5: {input: 3.0, output: 15.0, cached_input: 0.3}
    openai/gpt-5: {input: 1.25, output: 10.0}

Prices change and differ by account, so the project ships none; a provider's own reported
cost (through Inspect) is used when there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pydantic
from pydantic import BaseModel, Field, RootModel

from gamut_eval._files import read_document
from gamut_eval.construct._models import FROZEN, Usage
from gamut_eval.errors import ValidationError

__all__ = ["ModelPrice", "PriceTable", "load_prices"]

_MILLION = 1_000_000

Price = Annotated[float, Field(ge=0)]


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = FROZEN

    input: Price
    """Prompt tokens."""
    output: Price
    """Completion tokens."""
    cached_input: Price | None = None
    """Prompt tokens read from the provider's cache (default: the input price)."""


class PriceTable(RootModel[dict[str, ModelPrice]]):
    """Prices by model name."""

    def cost(self, model: str | None, usage: Usage) -> float | None:
        """The cost of ``usage``: the provider's reported cost when present, else from the
        table, else ``None`` (unknown, never zero)."""
        if usage.reported_cost_usd is not None:
            return usage.reported_cost_usd
        price = self.root.get(model or "")
        if price is None:
            return None if usage.calls else 0.0
        cached_price = price.input if price.cached_input is None else price.cached_input
        fresh_input = usage.input_tokens - usage.cached_tokens
        total = (
            fresh_input * price.input
            + usage.cached_tokens * cached_price
            + usage.output_tokens * price.output
        )
        return round(total / _MILLION, 6)


def load_prices(path: str | Path | None) -> PriceTable:
    """The price table at ``path`` (YAML or JSON), or an empty one."""
    if path is None:
        return PriceTable({})
    data = read_document(path)
    try:
        return PriceTable.model_validate(data)
    except pydantic.ValidationError as exc:
        from gamut_eval.rubric import pydantic_details

        raise ValidationError([d.in_file(path) for d in pydantic_details(exc)]) from None
