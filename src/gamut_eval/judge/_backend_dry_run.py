"""The ``dry-run`` backend (``gamut judge --dry-run``): what a pass would send and cost,
with nothing sent.

It plans exactly what a run would (checks the store lacks, identical content once) and
renders each response's shared prefix once to measure it. Tokens are estimated as characters
/ 4 and 1,000 per image, the same estimate the HTTP clients' rate limiter uses
(``_prompt.estimated_tokens``); output tokens as ``output_tokens`` per request (a verdict
reply is a sentence or two of JSON), with ``max_tokens`` per request as the ceiling. Re-asks
are not counted: they are a few percent of calls at most (docs/reliability.md B5 bounds
them).

Costs come from a user-supplied price table (``gamut_eval.prices``), never from prices
built into the code, which would be stale by the time anyone reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from gamut_eval.judge._pass import JudgeWork, Pending
from gamut_eval.judge._prompt import CHARS_PER_TOKEN, IMAGE_TOKENS
from gamut_eval.judge._registry import VERDICT_OUTPUT_TOKENS
from gamut_eval.judge._resolve import BackendOptions, ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.prices import ModelPrice, PriceTable, load_prices

__all__ = ["DryRunBackend", "DryRunReport", "dry_run_backend", "estimate_pass"]

_PER = 1_000_000


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
    work: JudgeWork,
    prices: PriceTable | None = None,
    output_tokens_per_request: int = VERDICT_OUTPUT_TOKENS,
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
    entry: tuple[str, ModelPrice] | None,
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
