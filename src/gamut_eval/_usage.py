"""What a run cost: tokens per answering model and per judge, priced from a table the user
gives (``--prices``); prices are never built in, they would be stale by the time anyone
reads them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from gamut_eval.judge import PriceTable
    from gamut_eval.responses import ResponseRow

__all__ = ["Usage", "answer_usage", "priced"]

_PER = 1_000_000


class Usage(BaseModel):
    """Tokens one model or judge used in a run, and what they cost."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    input: int = 0
    """Prompt tokens, cached ones included."""
    cached_input: int = 0
    """Prompt tokens served from the provider's prefix cache."""
    output: int = 0
    """Completion tokens (reasoning included where the provider counts it there)."""
    reasoning: int = 0
    """Reasoning tokens, where the provider reports them apart."""
    cost: float | None = None
    """Estimated cost from the price table; ``null`` without a table or an entry."""
    priced_as: str | None = None
    """The price-table entry used."""


def answer_usage(rows: Iterable[ResponseRow]) -> dict[str, Usage]:
    """Per answering model, the tokens its answers report (Inspect's model usage)."""
    totals: dict[str, dict[str, int]] = {}
    for row in rows:
        for usage in (row.usage or {}).values():
            if not isinstance(usage, dict):
                continue
            total = totals.setdefault(row.model, dict.fromkeys(Usage.model_fields, 0))
            total["input"] += int(usage.get("input_tokens") or 0) + int(
                usage.get("input_tokens_cache_read") or 0
            )
            total["cached_input"] += int(usage.get("input_tokens_cache_read") or 0)
            total["output"] += int(usage.get("output_tokens") or 0)
            total["reasoning"] += int(usage.get("reasoning_tokens") or 0)
    return {
        model: Usage(**{k: v for k, v in t.items() if k not in ("cost", "priced_as")})
        for model, t in totals.items()
    }


def priced(name: str, usage: Usage, prices: PriceTable | None) -> Usage:
    """``usage`` with its estimated cost, when ``prices`` has an entry for ``name``."""
    entry = prices.lookup(name) if prices is not None else None
    if entry is None:
        return usage
    label, price = entry
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    uncached = usage.input - usage.cached_input
    cost = uncached * price.input + usage.cached_input * cached_rate + usage.output * price.output
    return usage.model_copy(update={"cost": cost / _PER, "priced_as": label})
