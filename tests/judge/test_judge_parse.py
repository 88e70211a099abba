"""Reading a verdict out of a judge reply (docs/reliability.md A2, B5): the reply must BE a JSON
object (optionally in one ```json fence); a verdict is never searched for in prose."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from gamut_eval.judge import parse_reply
from gamut_eval.scoring import Verdict


@pytest.mark.parametrize("verdict", [v.value for v in Verdict])
def test_a_json_object_with_a_known_verdict_is_read(verdict: str) -> None:
    parsed = parse_reply(json.dumps({"explanation": "because", "verdict": verdict}))
    assert parsed.verdict == Verdict(verdict)
    assert parsed.explanation == "because"
    assert parsed.error is None


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"verdict": "contradicts", "explanation": "wrong animal"}\n```',
        '```\n{"verdict": "contradicts", "explanation": "wrong animal"}\n```',
        '  \n{"verdict": "contradicts", "explanation": "wrong animal"}\n\n',
        '{"verdict": " Contradicts ", "explanation": "wrong animal"}',
    ],
)
def test_one_code_fence_surrounding_whitespace_and_case_are_accepted(reply: str) -> None:
    parsed = parse_reply(reply)
    assert (parsed.verdict, parsed.explanation, parsed.error) == (
        Verdict.CONTRADICTS,
        "wrong animal",
        None,
    )


def test_a_missing_explanation_is_not_an_error() -> None:
    parsed = parse_reply('{"verdict": "missing"}')
    assert (parsed.verdict, parsed.explanation) == (Verdict.MISSING, "")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('The response says {"verdict": "meets"}, so it meets.', "no JSON object"),
        ('Here is my verdict:\n{"verdict": "meets", "explanation": "x"}', "no JSON object"),
        ('{"verdict": "meets", "explanation": "x"}\nHope this helps!', "JSON"),
        ("GRADE: C", "no JSON object"),
        ("meets", "no JSON object"),
        ('"meets"', "JSON without a `verdict` field"),
        ('{"verdict": "mee', "truncated JSON"),
        ('{"explanation": "It names the red panda", "verdict": "meets"', "truncated JSON"),
        ('{"verdict": "mostly meets"}', "unknown verdict 'mostly meets'"),
        ('{"verdict": "partially meets"}', "unknown verdict"),
        ('{"verdict": "pass"}', "unknown verdict"),
        ('{"verdict": null}', "unknown verdict"),
        ('{"verdict": 1}', "unknown verdict"),
        ('{"verdict": ["meets"]}', "unknown verdict"),
        ('{"verdict": {"verdict": "meets"}}', "unknown verdict"),
        ('{"explanation": "The response meets the check."}', "JSON without a `verdict` field"),
        ('[{"verdict": "meets"}]', "JSON without a `verdict` field"),
        ('{"grade": "meets"}', "JSON without a `verdict` field"),
        ("", "empty reply"),
        ("   \n\t ", "empty reply"),
        (None, "empty reply"),
        ("I'm sorry, I can't help with that.", "no JSON object"),
        ('```json\n{"verdict": "meets"}\n```\n```json\n{"verdict": "missing"}\n```', "JSON"),
        ('```json\n{"verdict": "meets"}', "no JSON object"),
        ('Sure! ```json\n{"verdict": "meets"}\n```', "no JSON object"),
    ],
)
def test_anything_else_is_an_error_with_a_reason_never_a_verdict(
    reply: str | None, reason: str
) -> None:
    parsed = parse_reply(reply)
    assert parsed.verdict is None
    assert parsed.error is not None
    assert reason in parsed.error


def test_a_refusal_is_an_error_even_when_content_looks_valid() -> None:
    parsed = parse_reply('{"verdict": "meets"}', refusal="I can't grade this.")
    assert parsed.verdict is None
    assert parsed.error is not None
    assert parsed.error.startswith("judge refused")
    assert "I can't grade this." in parsed.error


def test_the_verdict_field_wins_over_text_quoted_in_the_explanation() -> None:
    reply = json.dumps(
        {
            "explanation": 'The response claims {"verdict": "meets"} and GRADE: A; it is wrong.',
            "verdict": "missing",
        }
    )
    assert parse_reply(reply).verdict == Verdict.MISSING


@settings(max_examples=300, deadline=None)
@given(
    st.text()
    | st.text(alphabet='{}[]":, verdictmeissngpartly_\n`json').map(lambda s: s[:60])
    | st.builds(
        lambda prefix, verdict, suffix: prefix + json.dumps({"verdict": verdict}) + suffix,
        st.sampled_from(["", "x", "GRADE: C ", "```json\n"]),
        st.sampled_from(["meets", "missing", "mostly meets", "MEETS"]),
        st.sampled_from(["", "x", "\n```", " GRADE: C"]),
    )
)
def test_never_raises_and_a_verdict_only_comes_from_a_whole_json_object(text: str) -> None:
    parsed = parse_reply(text)
    assert (parsed.verdict is None) != (parsed.error is None)
    if parsed.verdict is None:
        return
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1].rsplit("\n", 1)[0]
    data = json.loads(body)
    assert isinstance(data, dict)
    assert data["verdict"].strip().lower() == parsed.verdict.value
