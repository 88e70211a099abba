"""The generation settings reach the requests Inspect sends, and run.json records them
(against the loopback fake OpenAI-compatible server, which keeps every request body)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from generate_helpers import Recorder

from gamut_eval.cli import cli
from gamut_eval.generate import generate_responses
from gamut_eval.generate._settings import GenerationSettings
from gamut_eval.testing import FakeOpenAIServer

SYSTEM = "Answer in one paragraph; never say {entity}."
"""Sent verbatim: ``{entity}`` is not filled from the sample's metadata."""


def test_settings_system_message_model_args_and_epochs_reach_inspect(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    # the server accepts only the key given as a model argument, not the one in the
    # environment: the request succeeds only if -M api_key reached the provider
    with FakeOpenAIServer(policy=recorder, api_key="key-from-model-args") as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "not-this-one")
        settings = GenerationSettings(
            temperature=0.3,
            max_tokens=77,
            top_p=0.9,
            reasoning_effort="low",
            system_message=SYSTEM,
            epochs=2,
            model_args={"api_key": "key-from-model-args"},
        )
        out = tmp_path / "responses.jsonl"
        model = f"openai-api/fake/gen-{tmp_path.name}"
        count = generate_responses(
            dataset, [model], "both", tmp_path / "logs", out, display="none", generation=settings
        )
    assert count == 2 * 2 * 2  # questions x settings x epochs
    (probe,) = recorder.model_probe_requests()  # the settings' parameters, few tokens
    assert (probe["temperature"], probe["reasoning_effort"], probe["max_tokens"]) == (0.3, "low", 8)
    assert len(recorder.answer_requests()) == len(recorder.bodies) - 1 == 8
    for body in recorder.answer_requests():
        assert body["temperature"] == 0.3
        assert body["max_tokens"] == 77
        assert body["top_p"] == 0.9
        assert body["reasoning_effort"] == "low"
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert body["messages"][1]["role"] == "user"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    cells = {(r["question_id"], r["setting"], r["metadata"]["epoch"]) for r in rows}
    assert cells == {
        (q, s, e) for q in ("q-1", "q-2") for s in ("multimodal", "text_only") for e in (1, 2)
    }


def test_defaults_send_no_generation_fields_and_no_system_message(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    model = f"openai-api/fake/gen-{tmp_path.name}"
    out = tmp_path / "responses.jsonl"
    generate_responses(dataset, [model], "text_only", tmp_path / "logs", out, display="none")
    assert len(recorder.model_probe_requests()) == 1
    assert len(recorder.answer_requests()) == len(recorder.bodies) - 1 == 2
    for body in recorder.answer_requests():
        assert not {"temperature", "top_p", "reasoning_effort"} & set(body)
        assert [m["role"] for m in body["messages"]] == ["user"]


def test_run_records_the_settings_and_a_change_is_another_run(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    out = tmp_path / "run"
    model = f"openai-api/fake/run-{tmp_path.name}"
    args = [
        "run", "--dataset", str(dataset), "--model", model, "--judge", "gamut/offline",
        "--setting", "text_only", "--out", str(out), "--temperature", "0.25",
        "--max-tokens", "64", "--system-message", "Be thorough.", "-M", "api_key=test-key",
    ]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    answers = recorder.answer_requests()
    assert len(recorder.model_probe_requests()) == 1
    assert len(answers) == len(recorder.bodies) - 1 == 2
    assert all(b["temperature"] == 0.25 and b["max_tokens"] == 64 for b in answers)
    assert all(b["messages"][0]["content"] == "Be thorough." for b in answers)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["generation"] == {
        "temperature": 0.25, "max_tokens": 64, "top_p": None, "reasoning_effort": None,
        "system_message": "Be thorough.", "epochs": 1, "model_args": {"api_key": "<redacted>"},
    }  # fmt: skip
    assert manifest["identity"]["generation"] == {
        "temperature": 0.25, "max_tokens": 64, "system_message": "Be thorough.",
        "model_args": {"api_key": "<redacted>"},
    }  # fmt: skip
    assert "test-key" not in (out / "run.json").read_text()
    # the same command continues (only its probe sent); another temperature is another run
    assert CliRunner().invoke(cli, args).exit_code == 0
    assert len(recorder.answer_requests()) == 2
    assert len(recorder.model_probe_requests()) == 2
    other = [*args[: args.index("0.25")], "0.5", *args[args.index("0.25") + 1 :]]
    refused = CliRunner().invoke(cli, other)
    assert refused.exit_code == 2, refused.output
    assert "generation" in refused.output
    assert len(recorder.answer_requests()) == 2
    assert len(recorder.model_probe_requests()) == 2  # refused before its probe


def test_requests_to_answering_models_are_retried_a_bounded_number_of_times() -> None:
    from gamut_eval.data import sample_dir
    from gamut_eval.generate._task import ANSWER_MAX_RETRIES, gamut_task

    task = gamut_task(dataset=str(sample_dir() / "dataset.jsonl"), setting="text_only")
    assert task.config.max_retries == ANSWER_MAX_RETRIES == 6  # Inspect's own: without end
    assert task.config.attempt_timeout == 300
