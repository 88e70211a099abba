"""The providers' prompt-cache rules, as documented: when a prompt prefix is served from
cache, in what steps, and what reads and writes cost against fresh input.

The judge's request layout is chosen with them (``_prompt.prompt_variant``: the worked
examples are added only where they make the shared prefix long enough to be cached and
the discount outweighs the added tokens), the dry run shows them and counts with them,
and the fake providers (``gamut_eval.testing``) emulate them. Sources, read for this
table (docs/decisions.md, "The providers' prompt caches"):

- OpenAI (automatic prefix cache): prompts of 1,024 tokens or more, hits in increments
  of 128 tokens; requests are routed by a hash of the prompt's first tokens combined with
  ``prompt_cache_key``; cached input is billed at 50% (gpt-4o, o1), 25% (gpt-4.1, o3,
  o4-mini) or 10% (gpt-5) of the input price; no charge for writing.
- Anthropic (``cache_control`` breakpoints): a marked prefix shorter than the model's
  minimum is not cached (1,024 tokens for Sonnet 4.5, Sonnet 4, Opus 4.1, Opus 4, Sonnet
  3.7; 2,048 for Sonnet 4.6 and the Haiku 3 models; 4,096 for Opus 4.5, Opus 4.6 and
  Haiku 4.5); writing the 5-minute cache costs 1.25x the input price, reading it 0.1x.
- Google (Gemini's implicit cache, Gemini 2.5 and later): prompts from 2,048 tokens
  (Gemini 2.5 Flash, Flash-Lite and Pro) or 4,096 (Gemini 3 and later); hits are billed
  at a discount (75% when implicit caching launched, 90% since), nothing for writing.

Where the documents disagree or a model is not listed, the rule here is the one that
never makes a layout choice cost more: the larger minimum and the smaller discount.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CacheRules:
    """One judge model's prompt-cache rules."""

    provider: str
    """``openai``, ``anthropic`` or ``google``."""
    min_tokens: int
    """The shortest prefix the provider caches, in its tokens."""
    step_tokens: int
    """A hit serves the cached prefix in steps of this many tokens above ``min_tokens``
    (OpenAI: 128); 1 where hits are not stepped."""
    read_rate: float
    """A cached prompt token's price as a share of the input price (the smallest
    documented discount of the model's family)."""
    write_rate: float
    """A token written to the cache, as a share of the input price (Anthropic's
    5-minute cache: 1.25; 1 where writing costs nothing extra)."""
    margin: float
    """How far a prefix's estimate (characters / 4) must pass ``min_tokens`` to be sure
    the provider's own tokenizer counts at least ``min_tokens``: its tokens hold up to
    4 x ``margin`` characters of English prose (OpenAI's o200k about 5)."""
    routing_key: bool = False
    """Whether requests name the cache they should reach (OpenAI's ``prompt_cache_key``)."""

    @property
    def bills_writes(self) -> bool:
        """Whether the provider reports (and bills) cache writes apart (Anthropic)."""
        return self.write_rate != 1.0

    def served(self, prefix_tokens: int) -> int:
        """Tokens a hit on a cached prefix of ``prefix_tokens`` tokens serves: none below
        the minimum, else the prefix cut down to a whole step above the minimum."""
        if prefix_tokens < self.min_tokens:
            return 0
        return prefix_tokens - (prefix_tokens - self.min_tokens) % self.step_tokens

    def surely_cached(self, estimated_tokens: float) -> bool:
        """Whether a prefix estimated at ``estimated_tokens`` (characters / 4) reaches the
        minimum whatever the provider's tokenizer makes of English prose."""
        return estimated_tokens >= self.min_tokens * self.margin

    def cost_per_check(self, prefix_tokens: float, checks: int) -> float:
        """What a shared prefix of ``prefix_tokens`` costs per check, in fresh input
        tokens, when the first of ``checks`` requests writes it to the cache and the
        others read it (nothing cached across answers is counted)."""
        served = self.served(int(prefix_tokens))
        first = prefix_tokens + served * (self.write_rate - 1)
        later = served * self.read_rate + (prefix_tokens - served)
        return (first + later * (checks - 1)) / max(checks, 1)

    def describe(self) -> str:
        """The rules in a few words, for the dry run."""
        text = f"{self.provider}'s rules: from {self.min_tokens:,} tokens"
        if self.step_tokens > 1:
            text += f", hits in steps of {self.step_tokens}"
        if self.bills_writes:
            text += f", writes billed apart ({self.write_rate:g}x input)"
        return text


_OPENAI = "openai"
_ANTHROPIC = "anthropic"
_GOOGLE = "google"

_OPENAI_READ: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"^gpt-5"), 0.1),
    (re.compile(r"^(gpt-4\.1|o3|o4-mini)"), 0.25),
    (re.compile(r"^(gpt-4o|chatgpt-4o|o1|gpt-4\.5)"), 0.5),
)
"""OpenAI models with the automatic prompt cache (gpt-4o and newer) and their discount;
other OpenAI models (gpt-3.5, gpt-4-turbo) cache nothing."""

_ANTHROPIC_MIN: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"^claude-(opus-4-[56]|haiku-4-5)"), 4096),
    (re.compile(r"^claude-(sonnet-4-6|3-5-haiku|3-haiku)"), 2048),
    (re.compile(r"^claude-(sonnet-4-5|opus-4-1|3-7-sonnet|3-5-sonnet|3-opus)"), 1024),
    (re.compile(r"^claude-(sonnet|opus)-4(-0)?(-\d{8})?$"), 1024),
)
_ANTHROPIC_UNLISTED = 4096
"""The largest documented minimum, for a model the table does not list."""

_GOOGLE_MIN: tuple[tuple[re.Pattern[str], int | None], ...] = (
    (re.compile(r"^gemini-(1\.|2\.0)"), None),  # no implicit cache before Gemini 2.5
    (re.compile(r"^gemini-2\.5-"), 2048),
)
_GOOGLE_UNLISTED = 4096
"""Gemini 3 and later, and any model the table does not list."""


def _model(judge: str) -> tuple[str, str]:
    provider, _, rest = judge.partition("/")
    return provider, rest.rsplit("/", 1)[-1].lower()


def cache_rules(judge: str) -> CacheRules | None:
    """The documented prompt-cache rules of ``judge`` (``openai/gpt-4.1-mini``,
    ``anthropic/claude-sonnet-4-5``, ``google/gemini-2.5-flash``); None for a judge whose
    provider documents none (local servers, gateways, built-in judges)."""
    provider, model = _model(judge)
    if provider == _OPENAI:
        for pattern, rate in _OPENAI_READ:
            if pattern.match(model):
                return CacheRules(_OPENAI, 1024, 128, rate, 1.0, 1.25, routing_key=True)
        return None
    if provider == _ANTHROPIC:
        minimum = next((m for p, m in _ANTHROPIC_MIN if p.match(model)), _ANTHROPIC_UNLISTED)
        return CacheRules(_ANTHROPIC, minimum, 1, 0.1, 1.25, 1.0)
    if provider == _GOOGLE:
        found = next(((m,) for p, m in _GOOGLE_MIN if p.match(model)), (_GOOGLE_UNLISTED,))
        if found[0] is None:
            return None
        return CacheRules(_GOOGLE, found[0], 1, 0.25, 1.0, 1.125)
    return None
