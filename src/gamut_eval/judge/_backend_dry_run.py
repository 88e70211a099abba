"""The ``dry-run`` backend (``gamut judge --dry-run``): what a pass would send and cost,
with nothing sent.

It plans exactly what a run would (checks the store lacks, identical content once, the
prompt variant each answer gets) and renders each response's shared prefix once to
measure it. Tokens are estimated as characters / 4 and 1,000 per image, the same estimate
the HTTP clients' rate limiter uses (``_prompt.estimated_tokens``); output tokens as
``output_tokens`` per request (a verdict reply is a sentence or two of JSON), with
``max_tokens`` per request as the ceiling. Re-asks are not counted: they are a few percent
of calls at most (docs/reliability.md B5 bounds them).

The prompt cache: the judge provider's documented rules (``_prompt.cache_rules``: the minimum
prefix, the steps hits come in, whether writes are billed apart), or a price-table entry's
``min_cached_tokens``, or for a judge whose provider documents none (a local server's
prefix cache) any length. Each answer's first request writes its shared prefix and the
others read it, as the send order has it (the first check of an answer goes out before its
others); what a cache shares across answers (the instructions) is not counted, so the
estimate errs high.

Costs come from a user-supplied price table (``gamut_eval.prices``), never from prices
built into the code, which would be stale by the time anyone reads them; the table's own
``ModelPrice.cost`` prices them, as it prices a finished run.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from gamut_eval.judge._pass import JudgeWork
from gamut_eval.judge._prompt import (
    CHARS_PER_TOKEN,
    CHECK_HEADING,
    CacheRules,
    cache_rules,
    estimated_tokens,
)
from gamut_eval.judge._registry import VERDICT_OUTPUT_TOKENS
from gamut_eval.judge._resolve import BackendOptions, ResolvedJudge
from gamut_eval.prices import ModelPrice, PriceTable, load_prices


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
    first, for prefixes of at least ``cache_min_tokens``, in the cache's steps."""
    cache_write_tokens: int = 0
    """Prefix tokens the first request of each response writes to a cache that bills
    writes apart (Anthropic)."""
    prompt_variants: dict[str, int] = {}
    """Responses per prompt variant (docs/method.md [J11])."""
    cache_rules: str | None = None
    """The prompt-cache rules the estimate follows, in a few words."""
    cache_min_tokens: int = 0
    """The shortest prefix the cache serves."""
    output_tokens: int
    """Estimated completion tokens (``output_tokens_per_request`` each)."""
    max_output_tokens: int
    """Completion tokens if every reply used ``max_tokens``."""
    currency: str | None = None
    price_entry: str | None = None
    """The price-table entry used; None without a table or a matching entry."""
    prices: ModelPrice | None = None
    """That entry's prices per million tokens (input, cached input, cache writes...)."""
    long_answers: int = 0
    """Answers estimated longer than the judge's ``long_answer_tokens``."""
    long_answer_tokens: int = 0
    """The part of ``prompt_tokens`` that is those answers, sent with each of their checks."""
    cost_standard: float | None = None
    """Standard prices, no prompt caching."""
    cost_cached: float | None = None
    """Standard prices with the cacheable prefix billed at the cached rate and the cache
    writes at the write rate."""
    cost_batch: float | None = None
    """Batch API prices (no caching discount assumed)."""

    @property
    def shared_prefix_fraction(self) -> float:
        return self.shared_prefix_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def _rules(judge: str, entry: tuple[str, ModelPrice] | None) -> tuple[CacheRules, str]:
    """The judge's documented cache rules, with a price-table minimum put first (any
    length, free writes and unstepped hits for a judge whose provider documents none), and
    how the report names them."""
    documented = cache_rules(judge)
    rules = documented or CacheRules("none documented", 0, 1, 1.0, 1.0, 1.0)
    table_minimum = entry[1].min_cached_tokens if entry else None
    if table_minimum is not None:
        rules = dataclasses.replace(rules, min_tokens=table_minimum)
        return rules, f"{rules.describe()} (minimum from the price table)"
    if documented is None:
        return rules, "none documented: a server's own prefix cache, from any length"
    return rules, rules.describe()


def estimate_pass(
    work: JudgeWork,
    prices: PriceTable | None = None,
    output_tokens_per_request: int = VERDICT_OUTPUT_TOKENS,
) -> DryRunReport:
    """Count and price what judging ``work``'s pending checks would send; sends nothing."""
    settings = work.settings
    totals: Counter[str] = Counter()
    entry = prices.lookup(settings.judge) if prices else None
    rules, described = _rules(settings.judge, entry)
    variants: Counter[str] = Counter()
    for answer in work.pending():
        rendered = answer.rendered
        shared = [rendered.system, {"role": "user", "content": list(rendered.prefix_parts)}]
        prefix = int(estimated_tokens(shared, 0))
        pending = answer.checks
        checks = sum(len(f"{CHECK_HEADING}{c.text.strip()}") for _, c in pending) // CHARS_PER_TOKEN
        variants[answer.plan.variant.version] += 1
        totals["requests"] += len(pending)
        totals["responses"] += 1
        totals["prefix"] += prefix * len(pending)
        totals["prompt"] += prefix * len(pending) + checks
        served = rules.served(prefix)
        totals["cacheable"] += served * (len(pending) - 1)
        if rules.bills_writes:  # the first request writes it, even with no check after it
            totals["written"] += served
    stats, output = work.stats, totals["requests"] * output_tokens_per_request
    report = DryRunReport(
        judge=settings.judge,
        total_checks=stats.total,
        cached=stats.cached,
        requests=totals["requests"],
        responses=totals["responses"],
        prompt_tokens=totals["prompt"],
        shared_prefix_tokens=totals["prefix"],
        cacheable_tokens=totals["cacheable"],
        cache_write_tokens=totals["written"],
        prompt_variants=dict(sorted(variants.items())),
        cache_rules=described,
        cache_min_tokens=rules.min_tokens,
        output_tokens=output,
        max_output_tokens=totals["requests"] * settings.max_tokens,
        currency=prices.currency if prices else None,
        long_answers=len(stats.long),
        long_answer_tokens=sum(tokens * checks for *_, tokens, checks in stats.long),
    )
    if entry is None:
        return report
    name, price = entry
    prompt = totals["prompt"]
    report.price_entry = name
    report.prices = price
    report.cost_standard = price.cost(prompt, 0, output)
    if price.cached_input is not None:
        report.cost_cached = price.cost(prompt, totals["cacheable"], output, totals["written"])
    if price.batch_input is not None and price.batch_output is not None:
        batch = ModelPrice(input=price.batch_input, output=price.batch_output)
        report.cost_batch = batch.cost(prompt, 0, output)
    return report


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
