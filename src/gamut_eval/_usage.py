"""Token usage: the one record of what model calls spent, for a run's answers and judges
(``run.json``) and for a build's artefacts and stages (``provenance.usage``,
``<stage>/usage.json``), priced from a table the user gives (``--prices``); prices are
never built in, they would be stale by the time anyone reads them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from gamut_eval.prices import PriceTable
    from gamut_eval.responses import ResponseRow


_TOKENS = ("input", "cached_input", "cache_write_input", "output", "reasoning")


class Usage(BaseModel):
    """Tokens one model or judge used, and what they cost.

    Files written with a build's earlier names (``input_tokens``, ``cached_tokens``,
    ``output_tokens``, ``reported_cost_usd``) are read too."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, validate_by_name=True
    )

    calls: int | None = None
    """Model calls made (a build's first attempts and repairs); ``null`` where calls are
    not counted (a run's answers and judges)."""
    input: int = Field(0, validation_alias=AliasChoices("input", "input_tokens"))
    """Prompt tokens, cached ones included."""
    cached_input: int = Field(0, validation_alias=AliasChoices("cached_input", "cached_tokens"))
    """Prompt tokens served from the provider's prefix cache."""
    cache_write_input: int = 0
    """Prompt tokens written to the provider's cache, where it bills them apart (Anthropic:
    1.25x the input price); part of ``input``, apart from ``cached_input``."""
    output: int = Field(0, validation_alias=AliasChoices("output", "output_tokens"))
    """Completion tokens (reasoning included where the provider counts it there)."""
    reasoning: int = 0
    """Reasoning tokens, where the provider reports them apart."""
    cost: float | None = Field(None, validation_alias=AliasChoices("cost", "reported_cost_usd"))
    """What the tokens cost: the provider's own figure (USD, ``priced_as`` null) when it
    reported one, else estimated from the price table; ``null`` when neither knows."""
    priced_as: str | None = None
    """The price-table entry used; ``null`` when the table priced nothing."""

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost, other.cost) if c is not None]
        counted = [c for c in (self.calls, other.calls) if c is not None]
        return Usage(
            calls=sum(counted) if counted else None,
            **{k: getattr(self, k) + getattr(other, k) for k in _TOKENS},
            cost=sum(costs) if costs else None,
            priced_as=self.priced_as if self.priced_as == other.priced_as else None,
        )


def answer_usage(rows: Iterable[ResponseRow]) -> dict[str, Usage]:
    """Per answering model, the tokens its answers report (Inspect's model usage)."""
    totals: dict[str, dict[str, int]] = {}
    for row in rows:
        for usage in (row.usage or {}).values():
            if not isinstance(usage, dict):
                continue
            total = totals.setdefault(row.model, dict.fromkeys(_TOKENS, 0))
            read = int(usage.get("input_tokens_cache_read") or 0)
            written = int(usage.get("input_tokens_cache_write") or 0)
            total["input"] += int(usage.get("input_tokens") or 0) + read + written
            total["cached_input"] += read
            total["cache_write_input"] += written
            total["output"] += int(usage.get("output_tokens") or 0)
            total["reasoning"] += int(usage.get("reasoning_tokens") or 0)
    return {model: Usage(**t) for model, t in totals.items()}


def priced(name: str | None, usage: Usage, prices: PriceTable | None) -> Usage:
    """``usage`` with its estimated cost, when ``prices`` has an entry for ``name`` and the
    provider reported no cost of its own."""
    if usage.cost is not None and usage.priced_as is None:
        return usage  # the provider's figure
    entry = prices.lookup(name) if prices is not None and name else None
    if entry is None:
        return usage
    label, price = entry
    cost = price.cost(usage.input, usage.cached_input, usage.output, usage.cache_write_input)
    return usage.model_copy(update={"cost": cost, "priced_as": label})
