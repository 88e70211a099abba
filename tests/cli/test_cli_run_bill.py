"""A whole ``gamut run`` through a fake provider reports its bill: 1,000 checks judged by
a Sonnet judge, whose prompt cache is emulated by Anthropic's documented rules, give a
run.json and a printed table with the cached tokens, the cache writes and their cost,
and every number agrees with what the provider reported and with hand arithmetic."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval._tables import write_rows
from gamut_eval.cli import cli
from gamut_eval.dataset import load_dataset
from gamut_eval.judge import GUIDED, render_response
from gamut_eval.testing import FakeAnthropicServer

JUDGE = "anthropic/claude-sonnet-4-5"
QUESTIONS, CHECKS = 40, 25
WORDS = [
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
]


def write_run_input(folder: Path) -> tuple[Path, Path]:
    """40 questions of 25 fact checks and a 600-token answer to each: 1,000 checks."""
    rng = random.Random(0)
    records, answers = [], []
    for q in range(QUESTIONS):
        items = [
            {"id": f"c{k}", "type": "fact", "tier": "valuable",
             "statement": f"Mentions the {rng.choice(WORDS)} of detail {k}."}
            for k in range(CHECKS)
        ]  # fmt: skip
        question = f"What is shown in picture {q}?"
        meta = {"id": f"q-{q}", "question": question, "items": items}
        records.append({"id": f"q-{q}", "question": question, "meta_rubric": meta})
        text = " ".join(rng.choice(WORDS) for _ in range(600))[:2400]
        answers.append(
            {"question_id": f"q-{q}", "model": "lab/m", "setting": "multimodal", "response": text}
        )
    dataset, responses = folder / "dataset.jsonl", folder / "answers.jsonl"
    write_rows(dataset, records)
    write_rows(responses, answers)
    return dataset, responses


def test_a_run_of_1000_checks_reports_cached_tokens_cache_writes_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, responses = write_run_input(tmp_path)
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "currency: USD\nmodels:\n  claude-sonnet-4-5:\n"
        "    {input: 3.0, cached_input: 0.3, cache_write_input: 3.75, output: 15.0}\n"
    )
    out = tmp_path / "run"
    argv = ["run", "--dataset", str(dataset), "--responses", str(responses), "--judge", JUDGE]
    argv += ["--setting", "multimodal", "--out", str(out), "--prices", str(prices), "--no-probe"]
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        result = CliRunner().invoke(cli, argv, terminal_width=200)
        reported = server.reported_usage()
        sent = len(server.requests)
    assert result.exit_code == 0, result.output
    assert sent == QUESTIONS * CHECKS == 1000
    used = json.loads((out / "run.json").read_text())["judge_usage"][JUDGE]
    assert (used["input"], used["cached_input"], used["cache_write_input"], used["output"]) == (
        reported["prompt"],
        reported["cached"],
        reported["written"],
        reported["output"],
    )
    # By hand: every answer is sent with one section of examples (its compact prefix is
    # under Sonnet's 1,024 tokens); its first check writes the prefix (system and fenced
    # answer, characters / 4: the instructions alone are too short to be cached apart),
    # the 24 others read it.
    data = load_dataset(dataset)
    prefixes = []
    for record, line in zip(data, responses.read_text().splitlines(), strict=True):
        answer = json.loads(line)["response"]
        rendered = render_response(record.question, answer, variant=GUIDED[0])
        prefix = rendered.system["content"] + "".join(p["text"] for p in rendered.prefix_parts)
        prefixes.append(len(prefix) // 4)
    assert used["cache_write_input"] == sum(prefixes)
    assert used["cached_input"] == sum(p * (CHECKS - 1) for p in prefixes)
    fresh = used["input"] - used["cached_input"] - used["cache_write_input"]
    cost = (
        fresh * 3.0
        + used["cached_input"] * 0.3
        + used["cache_write_input"] * 3.75
        + used["output"] * 15.0
    ) / 1e6
    assert used["cost"] == pytest.approx(cost)
    assert used["priced_as"] == "claude-sonnet-4-5"
    printed = " ".join(result.output.replace("│", " ").replace("┃", " ").split())
    numbers = (
        f"{used['input']:,} {used['cached_input']:,} {used['cache_write_input']:,} "
        f"{used['output']:,} {cost:,.4f} USD"
    )
    # the table names the judge in full or by a short label it explains below
    assert re.search(rf"judge (\S+) {numbers}", printed), printed
    assert "input cached input cache writes output cost" in printed
