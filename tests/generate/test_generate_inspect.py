"""Generation through Inspect against the loopback fake OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from generate_helpers import Recorder

from gamut_eval.generate import GenerationIncomplete, export_responses, generate_responses
from gamut_eval.testing import FakeOpenAIServer


def _model(tmp_path: Path) -> str:
    """A model name unique to the test: Inspect memoizes models by name, and a model made
    for an earlier test's server (another port) must not be reused."""
    return f"openai-api/fake/cand-{tmp_path.name}"


def _parts(body: dict[str, object]) -> list[str]:
    content = body["messages"][-1]["content"]  # type: ignore[index]
    if isinstance(content, str):
        return ["text"]
    return [p["type"] for p in content]


def test_images_are_sent_only_in_the_multimodal_setting(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    out = tmp_path / "responses.jsonl"
    count = generate_responses(
        dataset, [_model(tmp_path)], "both", tmp_path / "logs", out, display="none"
    )
    assert count == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["question_id"], r["setting"]) for r in rows} == {
        (q, s) for q in ("q-1", "q-2") for s in ("multimodal", "text_only")
    }
    assert all(r["model"] == _model(tmp_path) for r in rows)
    assert all(r["response"].startswith("It is a red square") for r in rows)
    bodies = recorder.answer_requests()
    assert len(bodies) == 4
    (probe,) = recorder.model_probe_requests()  # the multimodal setting: with an image
    assert "image_url" in _parts(probe)
    assert len(recorder.bodies) == 5
    multimodal = [b for b in bodies if "image_url" in _parts(b)]
    text_only = [b for b in bodies if "image_url" not in _parts(b)]
    assert len(multimodal) == 2
    assert len(text_only) == 2
    for body in multimodal:
        image = next(p for p in body["messages"][-1]["content"] if p["type"] == "image_url")
        assert image["image_url"]["url"].startswith("data:image/png;base64,")
    for body in text_only:
        assert "red square q-" in json.dumps(body["messages"])  # the entity named in text
    usage = rows[0]["usage"]
    assert usage
    assert next(iter(usage.values()))["input_tokens"] > 0


def test_a_rerun_keeps_finished_answers_and_missing_ones_are_reported(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    out = tmp_path / "responses.jsonl"
    logs = tmp_path / "logs"
    generate_responses(dataset, [_model(tmp_path)], "both", logs, out, display="none")
    sent = len(recorder.answer_requests())
    assert sent == 4
    # The same command again: the eval set finds every sample finished and sends nothing.
    assert generate_responses(dataset, [_model(tmp_path)], "both", logs, out, display="none") == 4
    assert len(recorder.answer_requests()) == sent
    assert len(recorder.model_probe_requests()) == 2  # one per call
    # Fewer answers in the logs than expected is an error that says how to continue.
    with pytest.raises(GenerationIncomplete, match="2 of 6 answers are missing"):
        export_responses(logs, tmp_path / "again.jsonl", expected=6)
    assert len((tmp_path / "again.jsonl").read_text().splitlines()) == 4
