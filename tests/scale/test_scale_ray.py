"""The ray backend on a local Ray instance against the loopback fake server: the same
verdicts as the fast executor, one row per key after a worker is killed mid-run, auth
failures surfacing on the driver; and the vLLM path's request/reply glue (no GPU here)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import ray
from judge_helpers import (
    JUDGE,
    Recorder,
    Workspace,
    quick_executor,
    settings,
    store_rows,
    synthetic_records,
    synthetic_responses,
    verdicts_by_check,
)

from gamut_eval.judge import (
    BackendOptions,
    JudgeAuthError,
    JudgeReport,
    judge_responses,
    make_backend,
)
from gamut_eval.judge._backend_ray import (
    _VERDICT_FIELDS,
    RayBackend,
    _DriverWriter,
    judge_ray,
    vllm_outcome,
    vllm_row,
    vllm_sampling_params,
)
from gamut_eval.judge._client import Completion
from gamut_eval.judge._pass import JudgePlan, JudgeWork
from gamut_eval.judge._prompt import PROMPT_VERSION
from gamut_eval.judge._resolve import resolve_judge
from gamut_eval.judge._settings import RaySettings
from gamut_eval.judge._store import StoredVerdict, VerdictStore
from gamut_eval.testing import FakeOpenAIServer

pytestmark = pytest.mark.filterwarnings(
    # Ray Data 2.60's DataContext warns about its own defaults when it is first built
    # (use_push_based_shuffle, use_polars, use_arrow_tensor_v2): none is set by us.
    "ignore::DeprecationWarning:ray.data.context",
)

ACTOR_TITLE = b"MapBatches(_JudgeActor)"
"""What Ray puts in the command line (process title) of a judge actor's worker."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module (starting one takes seconds)."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(var, None)  # workers inherit the environment: loopback only
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    records = synthetic_records(6, 4)
    return Workspace(tmp_path, records, synthetic_responses(records, 5))


def ray_settings(**overrides: object) -> RaySettings:
    values: dict[str, object] = {"workers": 2, "worker_concurrency": 8, "responses_per_batch": 2}
    return RaySettings.model_validate(values | overrides)


def judge_on_ray(ws: Workspace, ray_options: RaySettings) -> JudgeReport:
    """``judge_responses`` on the ray backend."""
    judge = settings()
    backend = make_backend(judge, BackendOptions(ray=ray_options), name="ray")
    assert isinstance(backend, RayBackend)
    return judge_responses(
        ws.dataset(), ws.responses_path, judge, ws.store, ws.out, backend=backend
    )


def test_ray_gives_the_fast_executors_verdicts_for_the_same_requests(
    local_ray: None, chat_server: Callable[..., FakeOpenAIServer], workspace: Workspace
) -> None:
    recorder = Recorder()
    chat_server(policy=recorder)
    fast_out = workspace.root / "fast.jsonl"
    judge_responses(
        workspace.dataset(),
        workspace.responses_path,
        settings(),
        workspace.root / "fast.sqlite",
        fast_out,
        backend=make_backend(settings(), BackendOptions(executor_factory=quick_executor)),
    )
    fast_pairs = recorder.pairs()
    recorder.clear()

    report = judge_on_ray(workspace, ray_settings())
    assert verdicts_by_check(workspace.rows()) == verdicts_by_check(workspace.rows(fast_out))
    assert (report.rows, report.unscored, report.stats.judged) == (120, 0, 120)
    assert recorder.pairs() == fast_pairs  # the same requests, each once
    assert set(fast_pairs.values()) == {1}
    rerun = judge_on_ray(workspace, ray_settings())
    assert (rerun.stats.cached, rerun.stats.judged) == (120, 0)


def actor_pids() -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if ACTOR_TITLE in cmdline:
                pids.append(int(name))
    return pids


def test_killing_a_worker_mid_run_leaves_exactly_one_row_per_key(
    local_ray: None, chat_server: Callable[..., FakeOpenAIServer], tmp_path: Path
) -> None:
    recorder = Recorder()
    server = chat_server(policy=recorder, latency_ms=25)
    records = synthetic_records(6, 4)
    ws = Workspace(tmp_path, records, synthetic_responses(records, 16))  # 384 checks
    killed: list[int] = []

    def kill_one_actor() -> None:
        deadline = time.monotonic() + 60
        while len(server.requests) < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        pids = actor_pids()
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    killer = threading.Thread(target=kill_one_actor)
    killer.start()
    with VerdictStore(ws.store) as store:
        work = JudgeWork(JudgePlan(ws.dataset(), ws.responses_path, settings()), store)
        judge = resolve_judge(settings(), "ray")
        duplicates = judge_ray(work, judge, ray_settings(worker_concurrency=4))
        work.flush()
    stats = work.stats
    killer.join()
    assert killed, "no judge actor was found to kill"
    assert stats.judged + duplicates >= ws.n_checks
    rows = store_rows(ws.store)
    assert set(rows) == set(ws.key_map().values())  # every key once (the key is the row id)
    assert {status for status, *_ in rows.values()} == {"ok"}
    # Every check was asked; the requests in flight on the killed worker were asked twice
    # (Ray retried its batch), yet each key has one row.
    assert set(recorder.pairs()) == set(ws.key_map())


def test_the_driver_writes_a_batch_that_ray_ran_twice_once(
    tmp_path: Path, workspace: Workspace
) -> None:
    rows = [
        StoredVerdict(f"{i:x}" * 64, JUDGE, PROMPT_VERSION, "meets", "", "ok", None, 1)
        for i in range(3)
    ]
    batch = {name: [getattr(r, name) for r in rows] for name in _VERDICT_FIELDS}
    batch["fatal"] = [""] * 3
    with VerdictStore(tmp_path / "s.sqlite") as store:
        work = JudgeWork(JudgePlan(workspace.dataset(), [], settings()), store)
        writer = _DriverWriter(work)
        writer.add(batch)
        writer.add(batch)
        assert writer.duplicates == 3
        assert work.stats.judged == 3
        assert store.count() == {"ok": 3}


def test_a_rejected_key_stops_the_run_on_the_driver(
    local_ray: None, chat_server: Callable[..., FakeOpenAIServer], workspace: Workspace
) -> None:
    chat_server(api_key="the-right-key")
    with pytest.raises(JudgeAuthError, match="FAKE_API_KEY"):
        judge_on_ray(workspace, ray_settings())


def test_responses_are_spread_over_several_endpoints_whole(
    local_ray: None, chat_server: Callable[..., FakeOpenAIServer], workspace: Workspace
) -> None:
    first, second = Recorder(), Recorder()
    urls = [chat_server(policy=first).base_url, chat_server(policy=second).base_url]
    report = judge_on_ray(workspace, ray_settings(endpoints=tuple(urls)))
    assert report.unscored == 0
    a = {response for response, _ in first.pairs()}
    b = {response for response, _ in second.pairs()}
    assert len(a) == len(b) == 15
    assert not a & b


# -- the vLLM engine's glue (the engine itself needs GPUs) ----------------------------------


def test_vllm_rows_and_replies_follow_the_online_request_and_parsing() -> None:
    params = vllm_sampling_params(settings())
    assert params["temperature"] == 0.0
    assert params["max_tokens"] == 400
    assert params["structured_outputs"]["json"]["required"] == ["explanation", "verdict"]
    assert "structured_outputs" not in vllm_sampling_params(settings(structured_output=False))
    messages = [{"role": "user", "content": [{"type": "text", "text": "x"}]}]
    assert json.loads(vllm_row("k", messages)["messages"]) == messages
    reply = vllm_outcome(
        {"key": "k", "text": '{"verdict": "meets"}', "prompt_tokens": 9, "completion_tokens": 3}
    )
    assert reply == Completion('{"verdict": "meets"}', 9, 3)
    failed = vllm_outcome({"key": "k", "__inference_error__": "CUDA out of memory"})
    assert failed == "vLLM engine error: CUDA out of memory"
