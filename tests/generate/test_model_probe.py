"""The answering models' probe: a dead URL, a wrong key or a model refusing images ends
`gamut run` / `gamut generate` in seconds (exit 2), naming the model, with nothing written."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from generate_helpers import Recorder

from gamut_eval.cli import cli
from gamut_eval.testing import FakeOpenAIServer


def _dead_url() -> str:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _run(dataset: Path, out: Path, model: str, *extra: str) -> list[str]:
    return ["run", "--dataset", str(dataset), "--model", model, "--judge", "gamut/offline",
            "--out", str(out), *extra]  # fmt: skip


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_dead_url_for_the_model_ends_the_run_in_seconds_with_nothing_written(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _dead_url()
    monkeypatch.setenv("DEAD_BASE_URL", url)
    monkeypatch.setenv("DEAD_API_KEY", "test-key")
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, _run(dataset, out, "openai-api/dead/cand"))
    assert result.exit_code == 2, result.output
    message = _flat(result.output)
    assert "openai-api/dead/cand" in message
    assert url in message
    assert "--no-probe" in message
    # It ends on the refused connection itself, not when the probe's timeout runs out
    # ("no reply in ... s"), and before any question is asked.
    assert "no reply" not in message
    assert not out.exists()


def test_gamut_generate_probes_the_model_before_the_eval_set(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _dead_url()
    monkeypatch.setenv("DEAD_BASE_URL", url)
    monkeypatch.setenv("DEAD_API_KEY", "test-key")
    logs, answers = tmp_path / "logs", tmp_path / "responses.jsonl"
    argv = ["generate", "--dataset", str(dataset), "--model", "openai-api/dead/cand",
            "--log-dir", str(logs), "--out", str(answers)]  # fmt: skip
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2, result.output
    assert url in _flat(result.output)
    assert not logs.exists()
    assert not answers.exists()


def test_a_wrong_key_ends_the_run_naming_the_variable(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    with FakeOpenAIServer(policy=recorder, api_key="right-key") as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "wrong-key")
        out = tmp_path / "run"
        result = CliRunner().invoke(cli, _run(dataset, out, "openai-api/fake/cand"))
    assert result.exit_code == 2, result.output
    message = _flat(result.output)
    assert "openai-api/fake/cand" in message
    assert "credentials" in message
    assert "FAKE_API_KEY" in message
    assert not out.exists()


def test_a_model_refusing_images_is_named_with_the_text_only_way_out(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    with FakeOpenAIServer(policy=recorder, dialect="llama-cpp") as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "test-key")
        model = "openai-api/fake/text-model"
        out = tmp_path / "run"
        refused = CliRunner().invoke(cli, _run(dataset, out, model, "--setting", "both"))
        assert refused.exit_code == 2, refused.output
        message = _flat(refused.output)
        assert model in message
        assert "does not take images" in message
        assert "run with setting text_only" in message
        assert message.endswith("(options --setting, --no-probe)")  # the CLI adds them
        assert not out.exists()
        # the policy never saw them: the image probe was refused, the text probe answered
        assert len(recorder.model_probe_requests()) == 1
        assert recorder.answer_requests() == []

        text_only = CliRunner().invoke(cli, _run(dataset, out, model, "--setting", "text_only"))
        assert text_only.exit_code == 0, text_only.output
    assert len(recorder.model_probe_requests()) == 2
    assert len(recorder.answer_requests()) == 2  # two questions, text only
    assert len((out / "responses.jsonl").read_text().splitlines()) == 2


def test_no_probe_skips_the_models_probe(
    dataset: Path, tmp_path: Path, fake: tuple[FakeOpenAIServer, Recorder]
) -> None:
    _, recorder = fake
    out = tmp_path / "run"
    model = "openai-api/fake/cand"
    result = CliRunner().invoke(
        cli, _run(dataset, out, model, "--setting", "text_only", "--no-probe")
    )
    assert result.exit_code == 0, result.output
    assert recorder.model_probe_requests() == []
    assert len(recorder.answer_requests()) == 2
