"""The judge's bill per check: the prompt variants' layout against today's layout (the
compact prompt for every answer) and against the HealthBench grader's prompt.

Prints two tables (docs/performance.md, "The judge's bill"):

1. OpenAI gpt-4.1-mini, tokens counted with o200k_base (the project's bundled tokenizer,
   ``gamut_eval.generate.ensure_o200k_base``), for the bench's paper-shaped answer (600
   tokens, a paper-sized rubric's first 30 checks): input, cached and output tokens per
   check and the cost per 1,000 checks at list prices, for the new layout, today's layout
   and the HealthBench grader's prompt with the same answer and checks. The grader's
   template is openai/simple-evals' ``healthbench_eval.py`` ``GRADER_TEMPLATE``, read from
   ``--healthbench-template FILE`` (not shipped here; without it that row is left out).
   Cached tokens follow OpenAI's documented rules (from 1,024 tokens, in steps of 128,
   the longest prefix shared with a request sent before) with the first check of an answer
   sent before its others; chat framing is counted as OpenAI's cookbook counts it (3 tokens
   per message, 3 to prime the reply). Output tokens: the dry run's 60 per check for all.
2. Each provider through its fake (``gamut_eval.testing``: tokens as characters / 4,
   caches emulated by the documented rules): input, cached and written tokens per check
   and the cost per 1,000 checks of today's layout and the new one, at answer lengths of
   100 to 8,000 tokens with paper-sized rubrics; the ratio is what
   tests/judge/test_judge_prompt_cost.py holds to (at least 1.8x at 600 tokens for OpenAI
   and Anthropic, never below 1).

Usage: python bench/bench_prompt_cost.py [--healthbench-template FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import paper_rubric
from bench_judge import response_text, write_data
from gamut_eval import compile_rubric, load_dataset
from gamut_eval._usage import Usage, priced
from gamut_eval.judge import (
    COMPACT,
    VERDICT_OUTPUT_TOKENS,
    JudgePlan,
    JudgeSettings,
    MemoryStore,
    PromptVariant,
    cache_rules,
    make_backend,
    prompt_variant,
    render_messages,
    render_response,
    run_pass,
)
from gamut_eval.prices import PriceTable
from gamut_eval.testing import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer

PRICES = PriceTable.model_validate(
    {
        "openai/gpt-4.1-mini": {"input": 0.40, "cached_input": 0.10, "output": 1.60},
        "anthropic/claude-sonnet-4-5": {
            "input": 3.00,
            "cached_input": 0.30,
            "cache_write_input": 3.75,
            "output": 15.00,
        },
        "google/gemini-2.5-flash": {"input": 0.30, "cached_input": 0.03, "output": 2.50},
    }
)
OPENAI = "openai/gpt-4.1-mini"
QUESTION = "What is this object, where does it come from and how is it made?"
CHECKS = 30
PER_MESSAGE, PRIMING = 3, 3


# -- 1. OpenAI, o200k tokens ------------------------------------------------------------------


def _encoder() -> Any:
    import tiktoken

    from gamut_eval.generate import ensure_o200k_base

    ensure_o200k_base()
    return tiktoken.get_encoding("o200k_base")


def _request_tokens(encoder: Any, messages: Sequence[dict[str, Any]]) -> list[int]:
    """The request as a token sequence: each message framed, then the reply's priming."""
    tokens: list[int] = []
    for message in messages:
        tokens += [-1] * PER_MESSAGE + encoder.encode(str(message["content"]))
    return tokens + [-2] * PRIMING


def _shared(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _openai_per_check(requests: list[list[int]]) -> tuple[float, float]:
    """(input, cached) tokens per check when the requests go out in order."""
    rules = cache_rules(OPENAI)
    assert rules is not None
    cached = 0
    for i, tokens in enumerate(requests[1:], start=1):
        cached += max(rules.served(_shared(tokens, earlier)) for earlier in requests[:i])
    return sum(map(len, requests)) / len(requests), cached / len(requests)


def _row(name: str, input_tokens: float, cached: float) -> list[str]:
    used = Usage(input=round(input_tokens * 1000), cached_input=round(cached * 1000))
    used = used.model_copy(update={"output": VERDICT_OUTPUT_TOKENS * 1000})
    cost = priced(OPENAI, used, PRICES).cost
    assert cost is not None
    share = cached / input_tokens
    return [name, f"{input_tokens:,.0f}", f"{cached:,.0f} ({share:.0%})",
            f"{VERDICT_OUTPUT_TOKENS}", f"{cost:.3f}"]  # fmt: skip


def openai_table(template: str | None) -> list[list[str]]:
    encoder = _encoder()
    rng = random.Random(1)
    checks = [c.text for c in compile_rubric(paper_rubric(0, rng)).checks[:CHECKS]]
    answer = response_text(rng, 600)
    chosen = prompt_variant("auto", cache_rules(OPENAI), QUESTION, answer, 0, len(checks))
    rows = []
    layouts: list[tuple[str, PromptVariant]] = [
        (f"new layout ({chosen.version})", chosen),
        (f"today's layout ({COMPACT.version})", COMPACT),
    ]
    for name, variant in layouts:
        rendered = render_response(QUESTION, answer, variant=variant)
        requests = [_request_tokens(encoder, render_messages(rendered, c)) for c in checks]
        rows.append(_row(name, *_openai_per_check(requests)))
    if template is not None:
        conversation = f"user: {QUESTION}\n\nassistant: {answer}"
        requests = []
        for check in checks:
            text = template.replace("<<conversation>>", conversation)
            text = text.replace("<<rubric_item>>", f"[1] {check}")
            requests.append(_request_tokens(encoder, [{"role": "user", "content": text}]))
        rows.append(_row("HealthBench grader (GRADER_TEMPLATE)", *_openai_per_check(requests)))
    return rows


# -- 2. every provider, through its fake ------------------------------------------------------

FAKES: dict[str, tuple[Any, str]] = {
    OPENAI: (FakeOpenAIServer, "OPENAI"),
    "anthropic/claude-sonnet-4-5": (FakeAnthropicServer, "ANTHROPIC"),
    "google/gemini-2.5-flash": (FakeGeminiServer, "GOOGLE"),
}
LENGTHS = (100, 600, 1500, 2000, 8000)


def _pass(judge: str, layout: str, dataset: Path, answers: Path) -> tuple[float, Usage, set[str]]:
    server_class, prefix = FAKES[judge]
    with server_class() as server:
        os.environ[f"{prefix}_BASE_URL"] = server.base_url
        os.environ[f"{prefix}_API_KEY"] = "bench"
        settings = JudgeSettings(
            judge=judge, backend="fast", prompt_layout=layout, probe=False, max_unscored_rate=1
        )
        plan = JudgePlan(load_dataset(dataset), answers, settings)
        variants = {p.variant.version for p in plan}
        stats = asyncio.run(run_pass(plan, make_backend(settings), MemoryStore()))
    used = Usage(
        input=stats.prompt_tokens,
        cached_input=stats.cached_tokens,
        cache_write_input=stats.cache_write_tokens,
        output=stats.completion_tokens,
    )
    cost = priced(judge, used, PRICES).cost
    assert cost is not None
    assert stats.ok == stats.judged
    return cost / stats.judged * 1000, used, variants


def _data(folder: Path, tokens: int) -> tuple[Path, Path]:
    """Paper-sized rubrics and answers of ``tokens`` tokens (characters / 4), 3 per length."""
    dataset, answers = write_data(folder, questions=3, models=1)
    rng = random.Random(tokens)
    lines = []
    for line in answers.read_text().splitlines():
        row = json.loads(line)
        row["response"] = response_text(rng, tokens)
        lines.append(json.dumps(row))
    answers.write_text("\n".join(lines) + "\n")
    return dataset, answers


def provider_table() -> list[list[str]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tokens in LENGTHS:
            folder = Path(tmp) / str(tokens)
            folder.mkdir()
            dataset, answers = _data(folder, tokens)
            for judge in FAKES:
                today, _, _ = _pass(judge, "compact", dataset, answers)
                new, used, variants = _pass(judge, "auto", dataset, answers)
                n = len(load_dataset(dataset).checklists()["q-00000"].checks)
                per = [used.input, used.cached_input, used.cache_write_input]
                per_check = "/".join(f"{t / (3 * n):,.0f}" for t in per)
                rows.append([judge, f"{tokens:,}", ", ".join(sorted(variants)), per_check,
                             f"{today:.3f}", f"{new:.3f}", f"{today / new:.2f}x"])  # fmt: skip
    return rows


def _print(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--healthbench-template", type=Path, default=None)
    args = parser.parse_args()
    template = args.healthbench_template.read_text() if args.healthbench_template else None
    print(f"1. {OPENAI}, o200k tokens per check, 600-token answer, {CHECKS} checks, list prices")
    _print(
        ["prompt", "input", "cached", "output", "USD per 1,000 checks"],
        openai_table(template),
    )
    print()
    print("2. every provider through its fake (characters / 4), paper-sized rubrics")
    headers = ["judge", "answer tokens", "new layout's variants"]
    headers += ["input/cached/written per check", "today USD/1k", "new USD/1k", "today/new"]
    _print(headers, provider_table())


if __name__ == "__main__":
    main()
