"""Providers that refuse parameters, and endpoints that cannot be used, as a first run meets
them: an OpenAI reasoning model, llama.cpp's server, a dead URL, a silent server, a wrong key
and an unknown model; all against local fakes that answer as those servers do."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from judge_helpers import JUDGE, Workspace, settings

from gamut_eval.cli import cli
from gamut_eval.judge import JudgeSettings, judge_responses
from gamut_eval.judge._wire_openai import (
    REASONING_OUTPUT_TOKENS,
    initial_shape,
    is_reasoning_model,
)
from gamut_eval.testing import FakeOpenAIServer, KeywordPolicy


class Bodies:
    """A policy that keeps every request body it answers, and answers as the keyword judge."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._base = KeywordPolicy()
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], ctx: Any) -> str:
        with self._lock:
            self.bodies.append(request)
        return str(self._base.reply(request, ctx))


def statuses(server: FakeOpenAIServer) -> list[int | None]:
    return [r.status for r in server.requests]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    servers: list[FakeOpenAIServer] = []

    def start(**options: Any) -> FakeOpenAIServer:
        server = FakeOpenAIServer(**options)
        server.start()
        servers.append(server)
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        return server

    monkeypatch.delenv("FAKE_API_KEY", raising=False)
    yield start
    for server in servers:
        server.stop()


# -- request shapes ---------------------------------------------------------------------------


def test_reasoning_model_names_start_with_their_own_parameters() -> None:
    for name in ("o1", "o1-mini", "o3", "o3-pro", "o4-mini", "gpt-5", "gpt-5-mini", "azure/o3"):
        assert is_reasoning_model(name), name
    for name in ("gpt-4.1-mini", "gpt-4o", "fake-judge", "qwen3-8b", "olmo-2"):
        assert not is_reasoning_model(name), name
    shape = initial_shape("o4-mini", settings(reasoning_effort="low"))
    body = shape.body("o4-mini", [{"role": "user", "content": "x"}], settings())
    # the hidden reasoning counts against the bound: 400 tokens could leave no verdict
    assert body["max_completion_tokens"] == REASONING_OUTPUT_TOKENS == 4096
    assert body["reasoning_effort"] == "low"
    roomy = shape.body("o4-mini", [{"role": "user", "content": "x"}], settings(max_tokens=9000))
    assert roomy["max_completion_tokens"] == 9000
    assert "max_tokens" not in body
    assert "temperature" not in body


def test_a_reasoning_model_is_corrected_once_by_the_probe_and_then_never_refused(
    fake: Any, small: Workspace
) -> None:
    bodies = Bodies()
    server = fake(policy=bodies, dialect="openai-reasoning")
    report = judge_responses(
        small.dataset(), small.responses_path, settings(probe=True), small.store, small.out
    )
    assert report.unscored == 0
    assert report.rows == 10
    # the probe met max_tokens, then the temperature: two refusals, each once
    assert statuses(server).count(400) == 2
    checked = [b for b in bodies.bodies if "States that it is 4." not in str(b["messages"])]
    assert len(checked) == 10
    for body in checked:
        assert body["max_completion_tokens"] == REASONING_OUTPUT_TOKENS
        assert "max_tokens" not in body
        assert "temperature" not in body


def test_without_a_probe_the_run_corrects_itself_within_a_few_requests(
    fake: Any, small: Workspace
) -> None:
    server = fake(policy=Bodies(), dialect="openai-reasoning")
    report = judge_responses(
        small.dataset(), small.responses_path, settings(concurrency=2), small.store, small.out
    )
    assert report.unscored == 0
    assert 2 <= statuses(server).count(400) <= 4  # at most once per parameter per request in flight


def test_llama_cpp_takes_the_schema_as_json_object(fake: Any, small: Workspace) -> None:
    bodies = Bodies()
    server = fake(policy=bodies, dialect="llama-cpp")
    report = judge_responses(
        small.dataset(), small.responses_path, settings(probe=True), small.store, small.out
    )
    assert report.unscored == 0
    assert statuses(server).count(500) == 1  # json_schema, once, in the probe
    formats = {b["response_format"]["type"] for b in bodies.bodies}
    assert formats == {"json_object"}
    assert all(b["response_format"]["schema"]["required"] for b in bodies.bodies)


# -- the probe, from the command line ---------------------------------------------------------


def judge_cli(ws: Workspace, *extra: str) -> tuple[Result, float]:
    argv = ["judge", "--dataset", str(ws.dataset_path), "--responses", str(ws.responses_path)]
    argv += ["--judge", JUDGE, "--store", str(ws.store), "--out", str(ws.out), *extra]
    started = time.monotonic()
    result = CliRunner().invoke(cli, argv)
    return result, time.monotonic() - started


def assert_nothing_written(ws: Workspace) -> None:
    assert not ws.store.exists()
    assert not ws.out.exists()


def test_a_refused_connection_ends_in_seconds_naming_judge_and_url(
    small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/v1"
    monkeypatch.setenv("FAKE_BASE_URL", url)
    result, _ = judge_cli(small)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"judge {JUDGE} at {url} cannot be used" in text
    assert "(FAKE_API_KEY is not set)" in text  # the fixture-less test runs without a key
    assert "--no-probe" in text
    # It ends on the refusal itself, at the first attempt, not when a timeout runs out.
    assert "timed out" not in text
    assert "no reply" not in text
    assert_nothing_written(small)


def test_a_server_that_never_answers_ends_within_the_timeout(
    small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections (the kernel does) and never answers
    try:
        monkeypatch.setenv("FAKE_BASE_URL", f"http://127.0.0.1:{silent.getsockname()[1]}/v1")
        result, seconds = judge_cli(small, "--timeout", "0.5")
    finally:
        silent.close()
    assert result.exit_code == 2, result.output
    assert "timed out" in result.output  # the request's own timeout, not the probe's guard
    text = " ".join(result.output.split())
    assert "no reply in 0.5 s (a longer timeout_s waits)" in text
    assert text.endswith("(options --timeout, --base-url, --no-probe)")  # the CLI adds them
    assert seconds < 20  # 40 times the timeout
    assert_nothing_written(small)


def test_a_wrong_key_ends_naming_the_variable(
    fake: Any, small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake(api_key="the-right-key")
    monkeypatch.setenv("FAKE_API_KEY", "a-wrong-key")
    result, _ = judge_cli(small)
    assert result.exit_code == 2, result.output
    assert "FAKE_API_KEY" in result.output
    assert "is not set" not in result.output
    assert_nothing_written(small)


def test_an_unknown_model_ends_naming_it(fake: Any, small: Workspace, tmp_path: Path) -> None:
    fake(known_models_only=True, models=("another-model",))
    result, _ = judge_cli(small)
    assert result.exit_code == 2, result.output
    assert "fake-judge" in result.output
    assert "does not exist" in result.output
    assert_nothing_written(small)


def test_a_run_with_a_dead_judge_writes_no_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_BASE_URL", "http://127.0.0.1:9/v1")
    out = tmp_path / "run"
    argv = ["run", "--responses", "sample", "--judge", JUDGE, "--out", str(out)]
    from gamut_eval.data import sample_dir

    argv[2] = str(sample_dir() / "responses.jsonl")
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2, result.output
    assert "cannot be used" in result.output
    assert not out.exists()


def test_run_json_records_how_the_requests_were_written(fake: Any, tmp_path: Path) -> None:
    import json

    from gamut_eval.data import sample_dir

    fake(policy=Bodies(), dialect="llama-cpp")
    out = tmp_path / "run"
    responses = tmp_path / "answers.jsonl"
    lines = (sample_dir() / "responses.jsonl").read_text().splitlines()
    responses.write_text("\n".join(line for line in lines if '"sample/brief"' in line) + "\n")
    argv = ["run", "--responses", str(responses), "--judge", JUDGE, "--out", str(out)]
    result = CliRunner().invoke(cli, [*argv, "--max-unscored-rate", "1"])
    assert result.exit_code == 0, result.output
    shape = json.loads((out / "run.json").read_text())["requests"][JUDGE]
    assert shape["structured"] == "json_object"
    assert shape["token_field"] == "max_tokens"
    assert "json_object instead of json_schema" in shape["corrections"][0]


def test_judge_request_args_reach_every_request_body(fake: Any, small: Workspace) -> None:
    bodies = Bodies()
    fake(policy=bodies)
    result, _ = judge_cli(small, "-J", "seed=7", "-J", "top-k=40", "--no-probe")
    assert result.exit_code == 0, result.output
    assert len(bodies.bodies) == 10
    assert all(b["seed"] == 7 and b["top_k"] == 40 for b in bodies.bodies)
    bad, _ = judge_cli(small, "-J", "seed", "--no-probe")
    assert bad.exit_code == 2
    assert "-J 'seed': expected key=value" in bad.output


def test_the_probe_waits_20_s_unless_a_timeout_was_chosen() -> None:
    from gamut_eval.judge._probe import PROBE_TIMEOUT_S, probe_timeout_s

    judge = "openai/gpt-4.1-mini"
    assert PROBE_TIMEOUT_S == 20
    assert probe_timeout_s(JudgeSettings(judge=judge)) == 20  # the default 120 s request timeout
    assert probe_timeout_s(JudgeSettings(judge=judge, timeout_s=300)) == 300  # a slow server
    assert probe_timeout_s(JudgeSettings(judge=judge, timeout_s=5)) == 5
