"""``gamut judge --dry-run``: what a pass would send and cost, with nothing sent.

It plans exactly what a run would (checks the store lacks, identical content once) and
renders each response's shared prefix once to measure it. Tokens are estimated as
characters / 4 and 1,000 per image, the same estimate the fast executor's rate limiter
uses; output tokens as ``output_tokens`` per request (a verdict reply is a sentence or
two of JSON), with ``max_tokens`` per request as the ceiling. Re-asks are not counted:
they are a few percent of calls at most (docs/reliability.md B5 bounds them).

Costs come from a user-supplied price table, never from prices built into the code, which
would be stale by the time anyone reads them::

    currency: USD            # display only
    models:                  # keyed by the judge as passed to --judge (or its model name)
      openai/gpt-4.1-mini:   # prices per million tokens
        input: 0.40
        cached_input: 0.10   # prompt tokens served from the provider's prefix cache
        output: 1.60
        batch_input: 0.20    # the provider's batch API
        batch_output: 0.80
        min_cached_tokens: 1024   # prompts shorter than this are never cached
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from gamut_eval._files import read_document
from gamut_eval.errors import ValidationError
from gamut_eval.judge._pass import JudgeWork, Pending
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge.backends import BackendOptions
from gamut_eval.judge.backends._limits import CHARS_PER_TOKEN, IMAGE_TOKENS
from gamut_eval.rubric._load import pydantic_details

__all__ = [
    "DryRunBackend",
    "DryRunReport",
    "ModelPrices",
    "PriceTable",
    "dry_run_backend",
    "estimate_pass",
    "load_prices",
]

_PER = 1_000_000
_Price = Annotated[float, Field(ge=0)]


class ModelPrices(BaseModel):
    """One judge's prices, per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    input: _Price
    """Standard prompt tokens."""
    output: _Price
    """Completion tokens."""
    cached_input: _Price | None = None
    """Prompt tokens served from the provider's prefix cache."""
    batch_input: _Price | None = None
    """Prompt tokens through the provider's batch API."""
    batch_output: _Price | None = None
    """Completion tokens through the provider's batch API."""
    min_cached_tokens: Annotated[int, Field(ge=0)] = 0
    """Prompts shorter than this are never served from the cache (OpenAI: 1024)."""


class PriceTable(BaseModel):
    """A user-supplied price table (``--prices prices.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    currency: str = "USD"
    """Shown next to costs; no conversion is done."""
    models: dict[str, ModelPrices]
    """Prices keyed by judge (``openai/gpt-4.1-mini``) or by model name (``gpt-4.1-mini``)."""

    def lookup(self, judge: str) -> tuple[str, ModelPrices] | None:
        """The entry for ``judge``: its full name first, then shorter tails of it."""
        parts = judge.split("/")
        for start in range(len(parts)):
            name = "/".join(parts[start:])
            if name in self.models:
                return name, self.models[name]
        return None


def load_prices(path: Path) -> PriceTable:
    """Read and validate a price table; every problem is reported with its path."""
    data = read_document(path)
    try:
        return PriceTable.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ValidationError([d.in_file(path) for d in pydantic_details(exc)]) from None


class DryRunReport(BaseModel):
    """What a judge pass would send, and what it would cost in each mode."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    judge: str
    total_checks: int
    """(response, check) pairs in the responses file."""
    cached: int
    """Pairs the store already holds, or repeats of identical content: not sent."""
    requests: int
    """Judge requests a pass would send (first asks)."""
    responses: int
    """Responses with at least one request."""
    prompt_tokens: int
    """Estimated prompt tokens of all requests."""
    shared_prefix_tokens: int
    """The part of ``prompt_tokens`` in each response's shared prefix (system prompt,
    question, image, response): identical bytes across that response's checks."""
    cacheable_tokens: int
    """Prefix tokens a prompt cache could serve: every request of a response but its
    first, for prefixes of at least ``min_cached_tokens``."""
    output_tokens: int
    """Estimated completion tokens (``output_tokens_per_request`` each)."""
    max_output_tokens: int
    """Completion tokens if every reply used ``max_tokens``."""
    currency: str | None = None
    price_entry: str | None = None
    """The price-table entry used; None without a table or a matching entry."""
    cost_standard: float | None = None
    """Standard prices, no prompt caching."""
    cost_cached: float | None = None
    """Standard prices with the cacheable prefix billed at the cached rate."""
    cost_batch: float | None = None
    """Batch API prices (no caching discount assumed)."""

    @property
    def shared_prefix_fraction(self) -> float:
        return self.shared_prefix_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def _prefix_chars(answer: Pending) -> tuple[int, int]:
    """(characters, images) of an answer's rendered shared prefix."""
    rendered = answer.rendered
    chars = len(rendered.system["content"])
    images = 0
    for part in rendered.prefix_parts:
        if part["type"] == "text":
            chars += len(part["text"])
        else:
            images += 1
    return chars, images


def estimate_pass(
    work: JudgeWork, prices: PriceTable | None = None, output_tokens_per_request: int = 60
) -> DryRunReport:
    """Count and price what judging ``work``'s pending checks would send; sends nothing."""
    settings = work.settings
    totals = {"requests": 0, "responses": 0, "prompt": 0, "prefix": 0, "cacheable": 0}
    entry = prices.lookup(settings.judge) if prices else None
    min_cached = entry[1].min_cached_tokens if entry else 0
    for answer in work.pending():
        chars, images = _prefix_chars(answer)
        prefix = chars // CHARS_PER_TOKEN + images * IMAGE_TOKENS
        pending = answer.checks
        checks = sum(len(f"# Check\n{c.text.strip()}") for _, c in pending) // CHARS_PER_TOKEN
        totals["requests"] += len(pending)
        totals["responses"] += 1
        totals["prefix"] += prefix * len(pending)
        totals["prompt"] += prefix * len(pending) + checks
        if prefix >= min_cached:
            totals["cacheable"] += prefix * (len(pending) - 1)
    totals["total"] = work.stats.total
    return _report(settings, totals, work.stats.cached, output_tokens_per_request, prices, entry)


@dataclass
class DryRunBackend:
    """The ``dry-run`` backend: plans exactly what a pass would send, and sends nothing."""

    judge: ResolvedJudge
    prices: PriceTable | None
    output_tokens: int
    name: str = "dry-run"
    writes_store: bool = False
    exports_rows: bool = False
    probed: bool = False
    report: DryRunReport | None = None
    """The estimate of the last pass."""

    async def run(self, work: JudgeWork) -> None:
        self.report = estimate_pass(work, self.prices, self.output_tokens)
        work.stats.unfinished = "dry run: nothing was sent"


def dry_run_backend(judge: ResolvedJudge, options: BackendOptions) -> DryRunBackend:
    prices = load_prices(options.prices) if options.prices else None
    return DryRunBackend(judge, prices, options.output_tokens)


def _report(
    settings: JudgeSettings,
    totals: dict[str, int],
    cached: int,
    per_request: int,
    prices: PriceTable | None,
    entry: tuple[str, ModelPrices] | None,
) -> DryRunReport:
    output = totals["requests"] * per_request
    report = DryRunReport(
        judge=settings.judge,
        total_checks=totals["total"],
        cached=cached,
        requests=totals["requests"],
        responses=totals["responses"],
        prompt_tokens=totals["prompt"],
        shared_prefix_tokens=totals["prefix"],
        cacheable_tokens=totals["cacheable"],
        output_tokens=output,
        max_output_tokens=totals["requests"] * settings.max_tokens,
        currency=prices.currency if prices else None,
    )
    if entry is None:
        return report
    name, p = entry
    prompt, cacheable = totals["prompt"], totals["cacheable"]
    report.price_entry = name
    report.cost_standard = (prompt * p.input + output * p.output) / _PER
    if p.cached_input is not None:
        billed = (prompt - cacheable) * p.input + cacheable * p.cached_input
        report.cost_cached = (billed + output * p.output) / _PER
    if p.batch_input is not None and p.batch_output is not None:
        report.cost_batch = (prompt * p.batch_input + output * p.batch_output) / _PER
    return report
