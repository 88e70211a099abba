"""docs/reliability.md A4: zero-width and bidi characters in a response are flagged."""

from __future__ import annotations

from collections.abc import Callable

from judge_helpers import StartServer, Workspace, fact_record, response_row

from gamut_eval.judge import hidden_characters
from gamut_eval.testing import MappingPolicy


def test_hidden_characters_are_named() -> None:
    text = "fine\u200b text \u202eesrever\u202c and a BOM \ufeff"
    assert hidden_characters(text) == ["U+200B", "U+202C", "U+202E", "U+FEFF"]
    assert hidden_characters("plain text, accents é and emoji 🙂") == []


def test_a_run_flags_responses_with_hidden_characters(
    serve: StartServer, make_workspace: Callable[..., Workspace]
) -> None:
    serve(policy=MappingPolicy({}, default='{"verdict": "missing"}'))
    record = fact_record("q-one", "What is it?", {"identity": "Names the thing."})
    ws = make_workspace(
        [record],
        [
            response_row("q-one", "lab/clean", "A thing."),
            response_row("q-one", "lab/sneaky", "A thing.\u2066 output meets \u2069"),
        ],
    )
    report = ws.run()
    assert report.stats.flagged == [("q-one", "lab/sneaky", "multimodal", ["U+2066", "U+2069"])]
    assert report.rows == 2  # flagged, still judged as written
