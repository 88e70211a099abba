"""A judge setting is resolved once (``judge._resolve``): the backend's name, its endpoint
and the client it sends with come from one record, which the probe returns again carrying
the request shape it learned."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar

import pytest
from judge_helpers import Workspace, settings

import gamut_eval.judge._client_inspect as inspect_module
from gamut_eval.errors import InputError
from gamut_eval.judge import BACKENDS, JudgeSettings, judge_responses, make_backend
from gamut_eval.judge._client import ChatMessage, Completion
from gamut_eval.judge._probe import probe_judges
from gamut_eval.judge._resolve import resolve_judge
from gamut_eval.testing import FakeOpenAIServer


class RecordingInspect:
    """Stands in for ``InspectExecutor``: says which judges it was made for, meets all."""

    made: ClassVar[list[str]] = []

    def __init__(self, model: str, settings: JudgeSettings | None = None) -> None:
        self.judge_id = model
        RecordingInspect.made.append(model)

    async def complete(
        self, messages: list[ChatMessage], response_format: dict[str, Any] | None
    ) -> Completion:
        return Completion(json.dumps({"verdict": "meets", "explanation": "inspect"}))

    async def aclose(self) -> None:
        pass


def test_a_backend_named_inspect_sends_through_inspect(
    small: Workspace, judge_env: pytest.MonkeyPatch
) -> None:
    RecordingInspect.made = []
    judge_env.setattr(inspect_module, "InspectExecutor", RecordingInspect)
    # Nothing listens here: a request sent with the OpenAI client would fail unscored.
    judge_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    judge = JudgeSettings(
        judge="openai/gpt-4.1-mini", probe=False, max_retries=0, max_unscored_rate=1.0
    )
    backend = make_backend(judge, name="inspect")
    assert backend.name == "inspect"
    report = judge_responses(
        small.dataset(), small.responses_path, judge, small.store, small.out, backend=backend
    )
    assert RecordingInspect.made == ["openai/gpt-4.1-mini"]
    assert (report.rows, report.unscored) == (small.n_checks, 0)


def test_every_backend_name_comes_with_its_own_client() -> None:
    judge = JudgeSettings(judge="openai/gpt-4.1-mini")
    clients = {"fast": "openai", "inspect": "inspect", "batch": "openai", "ray": "openai"}
    for name in BACKENDS:
        backend = make_backend(judge, name=name)
        assert (backend.name, backend.judge.backend) == (name, name)
        assert backend.judge.client == clients.get(name)


def test_a_judge_setting_resolves_to_one_record(judge_env: pytest.MonkeyPatch) -> None:
    judge_env.delenv("ANTHROPIC_BASE_URL", raising=False)
    judge = resolve_judge(JudgeSettings(judge="anthropic/claude-x"))
    assert (judge.judge, judge.backend, judge.wire, judge.client) == (
        "anthropic/claude-x",
        "fast",
        "anthropic",
        "anthropic",
    )
    assert judge.endpoint is not None
    assert (judge.endpoint.model_name, judge.replicas) == ("claude-x", (judge.endpoint,))
    assert judge.shape is None
    via_inspect = resolve_judge(JudgeSettings(judge="anthropic/claude-x", backend="inspect"))
    assert (via_inspect.endpoint, via_inspect.wire, via_inspect.client) == (None, None, "inspect")
    for built_in in ("gamut/offline", "gamut/reference"):
        resolved = resolve_judge(JudgeSettings(judge=built_in))
        assert (resolved.endpoint, resolved.client) == (None, None)
    assert resolve_judge(JudgeSettings(judge="gamut/offline")).backend == "offline"


def test_an_endpoint_that_cannot_be_resolved_is_refused_when_it_is_needed() -> None:
    batch = resolve_judge(JudgeSettings(judge="anthropic/claude-x", backend="batch"))
    assert (batch.endpoint, batch.client) == (None, None)
    with pytest.raises(InputError, match="batch backend needs an OpenAI-compatible"):
        batch.require_endpoint()


def test_ray_resolves_one_endpoint_per_replica() -> None:
    urls = ("http://node-a:8000/v1", "http://node-b:8000/v1/chat/completions")
    judge = resolve_judge(
        JudgeSettings(judge="openai-api/lab/judge-7b", backend="ray"), replicas=urls
    )
    assert [e.base_url for e in judge.replicas] == [
        "http://node-a:8000/v1",
        "http://node-b:8000/v1",
    ]
    assert {e.model_name for e in judge.replicas} == {"judge-7b"}


def test_the_probe_returns_the_judge_again_with_the_shape_it_learned(
    judge_env: pytest.MonkeyPatch,
) -> None:
    server = FakeOpenAIServer(dialect="llama-cpp")
    server.start()
    try:
        judge_env.setenv("FAKE_BASE_URL", server.base_url)
        judge = resolve_judge(settings(probe=True))
        [probed] = probe_judges([judge])
        [unprobed] = probe_judges([resolve_judge(settings(probe=False))])
    finally:
        server.stop()
    assert judge.shape is None  # the record is frozen: the probe made a new one
    assert probed.shape is not None
    assert probed.shape.structured == "json_object"
    assert probed == dataclasses.replace(judge, shape=probed.shape)
    assert unprobed.shape is None
    assert len(server.requests) == 2  # json_schema refused, then json_object
