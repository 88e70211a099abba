"""The judge's bill per provider, through the fake providers and their emulated caches:
the request layout of the prompt variants against today's layout (the compact prompt for
every answer, ``--judge-prompt compact``), at 30 checks per answer and list prices.

The fakes emulate each provider's documented cache rules (``tests/testing``), and their
requests are answered in arrival order, so the first check of an answer writes the cache
before its other checks read it, as the send order has it. Costs are what a run records
(tokens reported by the provider, cached reads and cache writes apart), priced by the one
price table."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from judge_helpers import Recorder, fact_record, response_row, settings, write_jsonl

from gamut_eval._usage import Usage, priced
from gamut_eval.cli import cli
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import (
    GUIDED,
    JudgePlan,
    JudgeStats,
    MemoryStore,
    make_backend,
    render_response,
    run_pass,
)
from gamut_eval.judge._wire_openai import initial_shape
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
"""List prices per million tokens (docs/decisions.md, "The providers' prompt caches")."""

PROVIDERS = {
    "openai/gpt-4.1-mini": (FakeOpenAIServer, "OPENAI"),
    "anthropic/claude-sonnet-4-5": (FakeAnthropicServer, "ANTHROPIC"),
    "google/gemini-2.5-flash": (FakeGeminiServer, "GOOGLE"),
}
CHECKS = 30
ANSWERS = 3
LENGTHS = (100, 600, 1500, 2000, 8000)
"""Answer lengths in tokens (characters / 4); 600 is the bench's paper-shaped answer."""

_WORDS = [
    "the",
    "a",
    "plant",
    "leaf",
    "grows",
    "tropical",
    "forest",
    "red",
    "panda",
    "dish",
    "rice",
    "tower",
    "iron",
    "built",
    "river",
    "stone",
    "market",
    "bridge",
    "harbor",
    "festival",
    "spice",
    "garden",
    "temple",
    "coast",
]


def answers_of(tokens: int, seed: int) -> str:
    """A bench-shaped answer of ``tokens`` tokens (characters / 4)."""
    rng = random.Random(seed)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < tokens * 4:
        words.append(rng.choice(_WORDS))
    return " ".join(words)[: tokens * 4]


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, Path]]:
    """Per answer length: a dataset of questions with 30 fact checks each, and one answer
    per question."""
    out = {}
    for tokens in LENGTHS:
        root = tmp_path_factory.mktemp(f"answers{tokens}")
        records, rows = [], []
        for q in range(ANSWERS):
            facts = {
                f"c{k}": f"Mentions the {_WORDS[(q + k) % len(_WORDS)]} of item {k} in part {q}."
                for k in range(CHECKS)
            }
            records.append(fact_record(f"q-{q}", f"What is shown in picture {q}?", facts))
            rows.append(response_row(f"q-{q}", "lab/model", answers_of(tokens, q)))
        out[tokens] = (
            write_jsonl(root / "dataset.jsonl", records),
            write_jsonl(root / "answers.jsonl", rows),
        )
    return out


@pytest.fixture
def provider(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The judge named by the test's parameter, its fake provider's URL and key set."""
    judge: str = request.param
    _, prefix = PROVIDERS[judge]
    monkeypatch.setenv(f"{prefix}_API_KEY", "test-key")
    return judge


def cost_per_check(
    judge: str, layout: str, dataset: Path, answers: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[float, JudgeStats]:
    """Judge every check with a fresh fake provider (a cold cache); the cost per check at
    list prices and the pass's counts."""
    server_class, prefix = PROVIDERS[judge]
    with server_class() as server:
        monkeypatch.setenv(f"{prefix}_BASE_URL", server.base_url)
        judge_settings = settings(judge=judge, prompt_layout=layout, concurrency=8)
        plan = JudgePlan(load_dataset(dataset), answers, judge_settings)
        stats = asyncio.run(run_pass(plan, make_backend(judge_settings), MemoryStore()))
        reported = server.reported_usage()
    used = Usage(
        input=stats.prompt_tokens,
        cached_input=stats.cached_tokens,
        cache_write_input=stats.cache_write_tokens,
        output=stats.completion_tokens,
    )
    assert (used.input, used.cached_input, used.cache_write_input, used.output) == (
        reported["prompt"],
        reported["cached"],
        reported["written"],
        reported["output"],
    )  # what the run records is what the provider reported
    cost = priced(judge, used, PRICES).cost
    assert cost is not None
    assert stats.judged == stats.ok == CHECKS * ANSWERS
    return cost / stats.judged, stats


def _costs(
    judge: str, tokens: int, workspaces: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[float, float]:
    dataset, answers = workspaces[tokens]
    today, _ = cost_per_check(judge, "compact", dataset, answers, monkeypatch)
    new, _ = cost_per_check(judge, "auto", dataset, answers, monkeypatch)
    return today, new


@pytest.mark.parametrize("provider", list(PROVIDERS), indirect=True)
@pytest.mark.parametrize("tokens", LENGTHS)
def test_the_layout_never_costs_more_per_check_than_todays(
    provider: str, tokens: int, workspaces: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    today, new = _costs(provider, tokens, workspaces, monkeypatch)
    assert new <= today, (today, new)


@pytest.mark.parametrize(
    "provider", ["openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5"], indirect=True
)
def test_600_token_answers_cost_at_least_1_8x_less_per_check(
    provider: str, workspaces: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    today, new = _costs(provider, 600, workspaces, monkeypatch)
    assert today >= 1.8 * new, (today, new)


# -- OpenAI's cache routing ---------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai/gpt-4.1-mini"], indirect=True)
def test_openai_requests_name_one_cache_per_answer(
    provider: str, workspaces: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every check of one answer carries the same ``prompt_cache_key`` and no two answers
    share one, so OpenAI routes an answer's checks to the machine holding its prefix."""
    recorder = Recorder()
    dataset, answers = workspaces[600]
    with FakeOpenAIServer(policy=recorder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        judge_settings = settings(judge=provider)
        plan = JudgePlan(load_dataset(dataset), answers, judge_settings)
        asyncio.run(run_pass(plan, make_backend(judge_settings), MemoryStore()))
    keys: dict[str, set[str]] = {}
    for call in recorder.calls:
        keys.setdefault(call.response, set()).add(call.body["prompt_cache_key"])
    assert len(keys) == ANSWERS
    assert all(len(k) == 1 for k in keys.values())
    assert len(set().union(*keys.values())) == ANSWERS


def test_other_openai_compatible_servers_get_no_cache_key(serve: Any, small: Any) -> None:
    recorder = Recorder()
    serve(policy=recorder)
    small.run(settings())
    assert recorder.calls
    assert not any("prompt_cache_key" in call.body for call in recorder.calls)


def test_a_server_that_refuses_the_cache_key_is_sent_none_after() -> None:
    shape = initial_shape("gpt-4.1-mini", settings(judge="openai/gpt-4.1-mini"))
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "P\n# Check\nC"}]
    assert "prompt_cache_key" in shape.body("gpt-4.1-mini", messages, settings())
    change = shape.correct(400, "Unrecognized request argument supplied: prompt_cache_key")
    assert change == "left prompt_cache_key out"
    assert "prompt_cache_key" not in shape.body("gpt-4.1-mini", messages, settings())


# -- the dry run --------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic/claude-sonnet-4-5"], indirect=True)
def test_the_dry_run_counts_cache_writes_and_reads_by_the_models_rules_and_prices_them(
    provider: str, workspaces: Any, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "anthropic/claude-sonnet-4-5: {input: 3.0, cached_input: 0.3, cache_write_input: 3.75,"
        " output: 15.0}\n"
    )
    dataset, answers = workspaces[600]
    argv = ["judge", "--dataset", str(dataset), "--responses", str(answers), "--judge", provider]
    argv += ["--store", str(tmp_path / "s.sqlite"), "--dry-run", "--prices", str(prices)]
    result = CliRunner().invoke(cli, argv, terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    # expected, rendered here: each answer's prefix (characters / 4) is written by its
    # first check and read by the 29 others; the checks are sent after it
    judge_settings = settings(judge=provider)
    plan = list(JudgePlan(load_dataset(dataset), answers, judge_settings))
    assert {p.variant for p in plan} == {GUIDED[0]}
    prefixes = []
    for planned in plan:
        rendered = render_response(planned.question, planned.row.response, variant=GUIDED[0])
        chars = len(rendered.system["content"]) + sum(len(p["text"]) for p in rendered.prefix_parts)
        prefixes.append(chars // 4)
    written, read = sum(prefixes), sum(p * (CHECKS - 1) for p in prefixes)
    checks = sum(sum(len(f"# Check\n{c.text}") for c in planned.checks) // 4 for planned in plan)
    prompt = sum(p * CHECKS for p in prefixes) + checks
    assert f"prompt variants (responses) gamut-judge-v2-examples1 {ANSWERS}" in text
    assert (
        "prompt cache anthropic's rules: from 1,024 tokens, writes billed apart (1.25x input)"
        in text
    )
    assert f"prompt tokens a prefix cache can serve {read:,}" in text
    assert f"prompt tokens written to the cache {written:,}" in text
    assert (
        "prices per 1M tokens USD input 3, cached input 0.3, cache writes 3.75, output 15" in text
    )
    output = CHECKS * ANSWERS * 60
    fresh = prompt - read - written
    cached = (fresh * 3.0 + read * 0.3 + written * 3.75 + output * 15.0) / 1e6
    assert f"cost: with prompt caching {cached:.4f} USD" in text
    assert f"cost: standard {(prompt * 3.0 + output * 15.0) / 1e6:.4f} USD" in text
