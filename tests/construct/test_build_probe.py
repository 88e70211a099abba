"""``gamut build`` shares the run's probe, timeout and error handling: a dead endpoint, a
server that never answers and a model that cannot take images end a stage in seconds
(exit 2) naming the way out, with the build folder untouched; each recorded error keeps
the model's reply; refine closes what it opened."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from construct_helpers import CORPUS, Responder, read_jsonl
from inspect_ai.model import ModelOutput

from gamut_eval.cli import cli
from gamut_eval.construct import Fetcher
from gamut_eval.testing import FakeOpenAIServer, FaultRule


def _dead_url() -> str:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _questions(manifest: Path, workdir: Path, model: str, *extra: str) -> Any:
    argv = ["build", "questions", "--images", str(manifest), "--workdir", str(workdir)]
    return CliRunner().invoke(cli, [*argv, "--model", model, *extra])


def test_a_dead_url_ends_a_build_stage_in_seconds_with_the_folder_untouched(
    manifest: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _dead_url()
    monkeypatch.setenv("DEAD_BASE_URL", url)
    monkeypatch.setenv("DEAD_API_KEY", "test-key")
    result = _questions(manifest, workdir, "openai-api/dead/builder")
    assert result.exit_code == 2, result.output
    message = _flat(result.output)
    assert "openai-api/dead/builder" in message
    assert url in message
    assert "no reply" not in message  # it ends on the refused connection itself
    assert "Traceback" not in message
    assert not workdir.exists()


def test_a_server_that_never_answers_ends_a_build_stage_after_the_probe_timeout(
    manifest: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gamut_eval.generate._probe.PROBE_TIMEOUT_S", 1.0)  # not twenty
    with FakeOpenAIServer(faults=[FaultRule("timeout", timeout_s=60)]) as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "test-key")
        result = _questions(manifest, workdir, "openai-api/fake/builder")
        assert len(server.requests) == 1  # the probe, and nothing after it
    assert result.exit_code == 2, result.output
    message = _flat(result.output)
    assert "openai-api/fake/builder" in message
    assert "timeout" in message.lower()
    assert "(option --probe)" in message or "--no-probe" in message
    assert not workdir.exists()


def test_a_model_that_cannot_take_images_is_named_with_the_way_out(
    manifest: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer(dialect="llama-cpp") as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "test-key")
        result = _questions(manifest, workdir, "openai-api/fake/text-model")
        # the image probe refused (the provider's SDK tries it again), the same probe
        # without the image answered: nothing more was sent
        statuses = [r.status for r in server.requests]
        assert statuses[-1] == 200
        assert set(statuses[:-1]) == {500}
    assert result.exit_code == 2, result.output
    message = _flat(result.output)
    assert "openai-api/fake/text-model" in message
    assert "does not take images" in message
    assert "use a vision model for this stage" in message
    assert not workdir.exists()


# -- what a recorded error keeps ---------------------------------------------------------------


def test_no_probe_sends_no_probe(manifest: Path, workdir: Path, responder: Responder) -> None:
    result = _questions(manifest, workdir, "mockllm/model", "--no-probe")
    assert result.exit_code == 0, result.output
    assert responder.probes == 0
    assert len(responder.of("questions")) == 2


def test_errors_jsonl_keeps_the_models_reply(
    manifest: Path, workdir: Path, responder: Responder
) -> None:
    responder.handlers["questions"] = lambda call: "I would rather describe the picture."
    result = _questions(manifest, workdir, "mockllm/model", "--max-repairs", "0")
    assert result.exit_code == 1
    assert responder.probes == 1  # with its image
    rows = read_jsonl(workdir / "questions" / "errors.jsonl")
    assert len(rows) == 2
    assert {r["kind"] for r in rows} == {"not-json"}
    assert {r["reply"] for r in rows} == {"I would rather describe the picture."}


def test_errors_jsonl_keeps_a_reply_cut_off(
    manifest: Path, workdir: Path, responder: Responder
) -> None:
    responder.handlers["questions"] = lambda call: ModelOutput.from_content(
        "mockllm/model", '{"candidates": [', "max_tokens"
    )
    result = _questions(manifest, workdir, "mockllm/model", "--max-tokens", "64")
    assert result.exit_code == 1
    rows = read_jsonl(workdir / "questions" / "errors.jsonl")
    assert {(r["kind"], r["reply"]) for r in rows} == {("truncated", '{"candidates": [')}


def test_refine_closes_the_fetcher_it_was_given(
    workdir: Path, responder: Responder, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[Fetcher] = []
    real = Fetcher.aclose

    async def aclose(self: Fetcher) -> None:
        closed.append(self)
        await real(self)

    monkeypatch.setattr(Fetcher, "aclose", aclose)
    argv = ["build", "refine", "--input", "sample", "--model", "mockllm/model"]
    result = CliRunner().invoke(cli, [*argv, "--corpus", str(CORPUS), "--workdir", str(workdir)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert len(closed) == 1
