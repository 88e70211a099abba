"""The judge prompt's variants (docs/method.md [J11]) and the providers' cache rules they
are chosen by: the compact prompt is today's, under today's version; the worked examples
come from the method, after the definitions and before the reply format, never after the
shared prefix; a variant is picked per answer by the documented minimums and a cost that
hand arithmetic checks; each variant keys its verdicts apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import PANDA, Workspace, fact_record, response_row, settings

from gamut_eval.judge import (
    COMPACT,
    EXAMPLES,
    GUIDED,
    PROMPT_VERSION,
    JudgePlan,
    PromptVariant,
    cache_rules,
    judge_key,
    prompt_variant,
    render_messages,
    render_response,
)
from gamut_eval.judge._prompt import CHARS_PER_TOKEN, SYSTEM_PROMPT

ROOT = Path(__file__).resolve().parents[2]
HEADINGS = (
    "## A fact",
    "## One element of a list",
    "## At least N of a list",
    "## Steps and their order",
    "## A related entity",
    "## An insight",
)

# -- the variants -----------------------------------------------------------------------------


def test_the_compact_prompt_is_todays_prompt_under_todays_version() -> None:
    """Verdicts judged before the variants existed are reused: the compact prompt's key is
    the one the earlier release computed for the same content (pinned here)."""
    assert COMPACT.version == "gamut-judge-v1" != PROMPT_VERSION
    assert COMPACT.system == SYSTEM_PROMPT
    assert SYSTEM_PROMPT.startswith("You grade one response to a question against ONE rubric")
    key = judge_key(
        "openai/gpt-4.1-mini",
        "What is this paste?",
        "Gochujang.",
        "Identifies the paste as gochujang.",
    )
    assert key == "eaf7edab1f2c7e4971962290559a4f6ff002e4deed6e427d206796400cf621e6"


def test_each_guided_variant_adds_one_more_section_between_definitions_and_reply_format() -> None:
    assert [v.examples for v in GUIDED] == list(range(1, len(EXAMPLES) + 1)) == list(range(1, 8))
    versions = {COMPACT.version, *(v.version for v in GUIDED)}
    assert len(versions) == 8  # each variant keys its verdicts apart
    definitions, reply = SYSTEM_PROMPT.split("\n\nGrade only what")[0], "Reply with only a JSON"
    for variant in GUIDED:
        system = variant.system
        assert system.startswith(definitions)
        assert all(
            (section in system) == (i < variant.examples) for i, section in enumerate(EXAMPLES)
        )
        assert system.index(EXAMPLES[variant.examples - 1]) < system.index("Grade only what")
        assert system.rindex(reply) > system.index(EXAMPLES[variant.examples - 1])


def test_the_examples_cover_every_kind_of_check_of_the_method() -> None:
    """One section per kind of check the compiler makes (docs/method.md [C2]), each with
    the verdicts it illustrates spelled as the reply must spell them."""
    text = "\n".join(EXAMPLES)
    method = (ROOT / "docs" / "method.md").read_text()
    for heading in HEADINGS:
        assert text.count(heading) == 1
    for check in (
        "Identifies the paste as gochujang.",
        "Mentions chili powder as one of the main ingredients of gochujang.",
        "Mentions bibimbap among the dishes that use gochujang.",
        "Mentions at least 2 of the following dishes that use gochujang: bibimbap; tteokbokki; "
        "jeyuk bokkeum; gochujang jjigae; dakgalbi; bokkeumbap; naengmyeon.",
        "Identifies the related entity doenjang",
        "Explains that gochujang is one of the jang, Korea's family of fermented pastes.",
    ):
        assert check.replace("  ", " ") in " ".join(text.split()), check
        assert check.split(" (")[0].rstrip(".")[:40] in " ".join(method.split()), check
    for verdict in ("meets", "partially_meets", "missing", "contradicts"):
        assert f'-> "{verdict}"' in text


@pytest.mark.parametrize("variant", [COMPACT, *GUIDED], ids=lambda v: v.version)
def test_every_variant_keeps_the_check_last_after_one_shared_prefix(variant: PromptVariant) -> None:
    rendered = render_response("What is it?", "A red panda.", variant=variant)
    first, second = (render_messages(rendered, c) for c in ("Names it.", "Says it eats bamboo."))
    assert first[0] == second[0] == {"role": "system", "content": variant.system}
    prefix = first[1]["content"].rsplit("# Check\n", 1)[0]
    assert second[1]["content"] == prefix + "# Check\nSays it eats bamboo."
    assert "Names it." not in variant.system


# -- the documented rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("judge", "minimum", "step", "read", "write"),
    [
        ("openai/gpt-4.1-mini", 1024, 128, 0.25, 1.0),
        ("openai/gpt-4o", 1024, 128, 0.5, 1.0),
        ("openai/gpt-5-mini", 1024, 128, 0.1, 1.0),
        ("anthropic/claude-sonnet-4-5", 1024, 1, 0.1, 1.25),
        ("anthropic/claude-sonnet-4-5-20250929", 1024, 1, 0.1, 1.25),
        ("anthropic/claude-sonnet-4-20250514", 1024, 1, 0.1, 1.25),
        ("anthropic/claude-opus-4-1", 1024, 1, 0.1, 1.25),
        ("anthropic/claude-3-7-sonnet-latest", 1024, 1, 0.1, 1.25),
        ("anthropic/claude-sonnet-4-6", 2048, 1, 0.1, 1.25),
        ("anthropic/claude-3-5-haiku-20241022", 2048, 1, 0.1, 1.25),
        ("anthropic/claude-haiku-4-5", 4096, 1, 0.1, 1.25),
        ("anthropic/claude-opus-4-5", 4096, 1, 0.1, 1.25),
        ("anthropic/claude-unknown-9", 4096, 1, 0.1, 1.25),
        ("google/gemini-2.5-flash", 2048, 1, 0.25, 1.0),
        ("google/gemini-2.5-pro", 2048, 1, 0.25, 1.0),
        ("google/gemini-3-pro-preview", 4096, 1, 0.25, 1.0),
    ],
)
def test_each_model_gets_its_providers_documented_rules(
    judge: str, minimum: int, step: int, read: float, write: float
) -> None:
    rules = cache_rules(judge)
    assert rules is not None
    assert (rules.min_tokens, rules.step_tokens, rules.read_rate, rules.write_rate) == (
        minimum,
        step,
        read,
        write,
    )


@pytest.mark.parametrize(
    "judge",
    [
        "openai-api/llama/smollm2",
        "vllm/qwen",
        "gamut/offline",
        "openai/gpt-3.5-turbo",
        "google/gemini-2.0-flash",
        "google/gemini-1.5-pro",
    ],
)
def test_judges_without_a_documented_cache_have_no_rules(judge: str) -> None:
    assert cache_rules(judge) is None


def test_openai_hits_come_in_steps_of_128_tokens_above_1024() -> None:
    rules = cache_rules("openai/gpt-4.1-mini")
    assert rules is not None
    served = [rules.served(n) for n in (1023, 1024, 1151, 1152, 1300, 2000)]
    assert served == [0, 1024, 1024, 1152, 1280, 1920]
    # 30 checks of a 1,300-token prefix: the first pays it all, 29 read 1,280 at 0.25x
    # and pay the 20 tokens beyond the last step.
    assert rules.cost_per_check(1300, 30) == pytest.approx((1300 + 29 * (320 + 20)) / 30)


def test_anthropic_writes_cost_1_25x_and_reads_0_1x() -> None:
    rules = cache_rules("anthropic/claude-sonnet-4-5")
    assert rules is not None
    assert rules.cost_per_check(1000, 30) == 1000  # below the minimum: never cached
    assert rules.cost_per_check(2000, 30) == pytest.approx((2000 * 1.25 + 29 * 200) / 30)


# -- the choice per answer -----------------------------------------------------------------------


def _tokens(variant: PromptVariant, question: str, answer: str) -> float:
    rendered = render_response(question, answer, variant=variant)
    chars = len(variant.system) + sum(len(p["text"]) for p in rendered.prefix_parts)
    return chars / CHARS_PER_TOKEN


def _answer(tokens: int) -> str:
    return ("word " * tokens)[: tokens * 4]


QUESTION = "What is shown in picture 0?"


@pytest.mark.parametrize(
    ("judge", "tokens", "expected"),
    [
        # OpenAI: the compact prefix of a 600-token answer (~990 tokens) is under 1,024;
        # the fewest sections that bring it surely over (1,280: 1,024 x 1.25) are two.
        ("openai/gpt-4.1-mini", 600, 2),
        # a 2,000-token answer is cached as it is: no examples
        ("openai/gpt-4.1-mini", 2000, 0),
        # at gpt-4o's 50% discount five sections for a 100-token answer cost more than
        # the 474 uncached tokens they replace; at gpt-4.1's 75% they cost less
        ("openai/gpt-4o", 100, 0),
        ("openai/gpt-4.1-mini", 100, 5),
        # Anthropic's Sonnet: 1,024 is enough (Claude's tokens are never longer than 4
        # characters of prose)
        ("anthropic/claude-sonnet-4-5", 600, 1),
        # Haiku 4.5 caches from 4,096: no number of sections reaches it from 600 tokens
        ("anthropic/claude-haiku-4-5", 600, 0),
        ("anthropic/claude-haiku-4-5", 3400, 2),
        # Gemini 2.5 caches from 2,048: 600 tokens are out of reach, 1,500 are not
        ("google/gemini-2.5-flash", 600, 0),
        ("google/gemini-2.5-flash", 1500, 3),
        # a local server: always the compact prompt
        ("openai-api/llama/smollm2", 600, 0),
    ],
)
def test_the_variant_is_the_fewest_examples_that_get_the_prefix_cached_where_it_pays(
    judge: str, tokens: int, expected: int
) -> None:
    rules = cache_rules(judge)
    answer = _answer(tokens)
    chosen = prompt_variant("auto", rules, QUESTION, answer, 0, 30)
    assert chosen.examples == expected
    if rules is None:
        return
    compact = _tokens(COMPACT, QUESTION, answer)
    if expected == 0:
        return
    assert compact < rules.min_tokens
    guided = _tokens(chosen, QUESTION, answer)
    assert guided >= rules.min_tokens * rules.margin
    if expected > 1:  # one section fewer would not have been enough
        fewer = _tokens(GUIDED[expected - 2], QUESTION, answer)
        assert fewer < rules.min_tokens * rules.margin
    assert rules.cost_per_check(guided, 30) < compact


def test_one_check_per_answer_never_gets_examples() -> None:
    rules = cache_rules("anthropic/claude-sonnet-4-5")
    assert prompt_variant("auto", rules, QUESTION, _answer(600), 0, 1) == COMPACT


def test_fixed_layouts_ignore_the_rules() -> None:
    rules = cache_rules("openai/gpt-4.1-mini")
    assert prompt_variant("compact", rules, QUESTION, _answer(600), 0, 30) == COMPACT
    assert prompt_variant("guided", None, QUESTION, _answer(9000), 0, 30) == GUIDED[-1]


def test_the_plan_keys_each_answer_by_its_variant(tmp_path: Path) -> None:
    """A 600-token and a 2,000-token answer to a question of 30 checks, at an OpenAI judge:
    the first gets two sections of examples, the second none, and each key hashes the
    variant its answer is sent with (the compact one the key it always had)."""
    facts = {f"c{k}": f"Mentions detail number {k} of the picture." for k in range(30)}
    record = fact_record("q-0", QUESTION, facts)
    rows = [response_row("q-0", "lab/a", _answer(600)), response_row("q-0", "lab/b", _answer(2000))]
    ws = Workspace(tmp_path, [record], rows)
    judge = "openai/gpt-4.1-mini"
    plan = list(JudgePlan(ws.dataset(), ws.responses_path, settings(judge=judge)))
    assert [p.variant for p in plan] == [GUIDED[1], COMPACT]
    for planned in plan:
        for check, key in zip(planned.checks, planned.keys, strict=True):
            version = planned.variant.version
            expected = judge_key(judge, QUESTION, planned.row.response, check.text, None, version)
            assert key == expected
    # the same content under another layout is another verdict
    fixed = settings(judge=judge, prompt_layout="compact")
    compact = list(JudgePlan(ws.dataset(), ws.responses_path, fixed))
    assert compact[0].keys != plan[0].keys
    assert compact[1].keys == plan[1].keys


def test_the_variant_rides_along_to_every_request(tmp_path: Path) -> None:
    rows = [response_row("q-panda", "lab/a", "A red panda.")]
    ws = Workspace(tmp_path, [PANDA], rows)
    [planned] = JudgePlan(ws.dataset(), ws.responses_path, settings(prompt_layout="guided"))
    rendered = render_response(planned.question, planned.row.response, variant=planned.variant)
    assert render_messages(rendered, "x")[0]["content"] == GUIDED[-1].system
    assert json.dumps(settings(prompt_layout="guided").verdict_identity())  # recorded
    assert settings(prompt_layout="guided").verdict_identity()["prompt_layout"] == "guided"
