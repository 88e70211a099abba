"""The batch backend against a fake batch API served by the test suite: upload, create,
poll, download; errors inside a batch; re-asks in follow-up batches; splitting at the
limits; and a restart between submit and download that collects instead of resubmitting."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_batch import FakeBatchAPI, run_requests
from judge_helpers import (
    JUDGE,
    Workspace,
    quick_executor,
    settings,
    store_rows,
    verdicts_by_check,
)

from gamut_eval.judge import (
    BackendOptions,
    JudgeAuthError,
    JudgeReport,
    JudgeSettings,
    judge_responses,
    make_backend,
    resolve_endpoint,
)
from gamut_eval.judge._backend_batch import (
    BatchBackend,
    BatchClient,
    BatchesPending,
    BatchFileWriter,
    BatchWriteReport,
    IngestCounts,
)
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._pass import PassEvent
from gamut_eval.judge._resolve import Endpoint
from gamut_eval.judge._settings import BatchSettings
from gamut_eval.testing import FakeOpenAIServer

DIET = "eats mostly"
"""A substring of exactly one check's text in the ``small`` workspace (two responses)."""


def quick_client(endpoint: Endpoint) -> BatchClient:
    return BatchClient(endpoint, timeout_s=10, max_retries=3, backoff_base_s=0.01)


def batch_backend(settings: JudgeSettings, **options: Any) -> BatchBackend:
    backend = make_backend(
        settings, BackendOptions(client_factory=quick_client, **options), name="batch"
    )
    assert isinstance(backend, BatchBackend)
    return backend


def run_batch(
    ws: Workspace,
    events: list[str] | None = None,
    judge_settings: JudgeSettings | None = None,
    **batch: Any,
) -> JudgeReport:
    judge_settings = judge_settings or settings()
    options = BatchSettings(**({"poll_interval_s": 0.001} | batch))
    notes = events if events is not None else []

    def on_event(event: PassEvent) -> None:
        if event.kind == "note":
            notes.append(event.message)

    return judge_responses(
        ws.dataset(),
        ws.responses_path,
        judge_settings,
        ws.store,
        ws.out,
        backend=batch_backend(judge_settings, batch=options),
        on_event=on_event,
    )


def write_batch_requests(ws: Workspace, batch: BatchSettings) -> BatchWriteReport:
    """Only write the request files (the batch backend's write-only mode)."""
    backend = batch_backend(settings(), batch=batch, batch_write_only=True)
    judge_responses(ws.dataset(), ws.responses_path, settings(), ws.store, None, backend=backend)
    assert backend.written is not None
    return backend.written


def ingest_batch_results(ws: Workspace, results: list[Path]) -> tuple[JudgeReport, IngestCounts]:
    """Ingest result files (the batch backend's ingest mode), exporting the rows."""
    backend = batch_backend(settings(), batch_ingest=tuple(results))
    report = judge_responses(
        ws.dataset(), ws.responses_path, settings(), ws.store, ws.out, backend=backend
    )
    assert backend.ingested is not None
    return report, backend.ingested


def on_check(text: str, fault: str, *, first_ask_only: bool = False) -> Any:
    """A fault for the requests whose check contains ``text``."""

    def rule(custom_id: str, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        if first_ask_only and len(messages) > 2:
            return None
        return fault if text in messages[1]["content"] else None

    return rule


def batch_tables(store: Path) -> tuple[list[tuple[Any, ...]], int]:
    with sqlite3.connect(store) as db:
        jobs = db.execute("SELECT state, batch_id, provider_status FROM batch_jobs").fetchall()
        reasks = db.execute("SELECT COUNT(*) FROM batch_reasks").fetchone()[0]
    db.close()
    return jobs, reasks


# -- the happy path -------------------------------------------------------------------------


def test_a_batch_pass_gives_the_fast_executors_verdicts(
    batch_api: FakeBatchAPI, small: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    report = run_batch(small, events)
    batch_rows = verdicts_by_check(small.rows())

    with FakeOpenAIServer() as chat:  # the same requests through the fast executor
        monkeypatch.setenv("FAKE_BASE_URL", chat.base_url)
        fast_out = tmp_path / "fast.jsonl"
        judge_responses(
            small.dataset(),
            small.responses_path,
            settings(),
            tmp_path / "fast.sqlite",
            fast_out,
            backend=make_backend(settings(), BackendOptions(executor_factory=quick_executor)),
        )
    assert batch_rows == verdicts_by_check(small.rows(fast_out))
    assert all(status == "ok" for status, _ in batch_rows.values())
    assert (report.rows, report.unscored, report.stats.judged, report.stats.calls) == (
        10,
        0,
        10,
        10,
    )
    assert batch_api.calls["upload"] == batch_api.calls["create"] == 1
    assert batch_api.calls["download"] == 1  # an output file, no error file
    assert set(store_rows(small.store)) == set(small.key_map().values())
    seen = " ".join(events)
    for status in ("validating", "in_progress", "finalizing", "completed"):
        assert status in seen
    jobs, reasks = batch_tables(small.store)
    assert jobs == [("ingested", "batch_0", "completed")]
    assert reasks == 0
    assert not list((small.root / "verdicts.sqlite.batches").glob("*.jsonl"))  # cleaned up


def test_request_lines_are_the_fast_executors_bodies_keyed_by_store_key(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    run_batch(small)
    lines = batch_api.request_files[0]
    keys = small.key_map()
    assert sorted(line["custom_id"] for line in lines) == sorted(keys.values())
    fast = OpenAIExecutor(resolve_endpoint(JUDGE), settings(max_tokens=400))
    for line in lines:
        assert (line["method"], line["url"]) == ("POST", "/v1/chat/completions")
        expected = json.loads(fast._encode(line["body"]["messages"], structured=True)[0])
        assert line["body"] == expected
    second = run_batch(small)  # everything is in the store now: nothing is submitted
    assert second.stats.cached == 10
    assert batch_api.calls["create"] == 1


# -- errors inside a batch ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("http_400", "HTTP 400: Refused (http_400)."),
        ("content_policy", "content policy: Refused (content_policy)."),
        ("expired", "batch error: batch_expired: This request could not be executed"),
        ("drop", "no result in batch batch_0 (completed)"),
    ],
)
def test_errors_inside_a_batch_are_unscored_with_the_reason_and_not_cached(
    batch_api: FakeBatchAPI, small: Workspace, fault: str, reason: str
) -> None:
    batch_api.fault = on_check(DIET, fault)
    report = run_batch(small)
    rows = small.rows()
    bad = [r for r in rows if r["check_id"] == "diet"]
    assert len(bad) == 2
    assert report.unscored == 2
    assert all(r["status"] == "unscored" and r["verdict"] is None for r in bad)
    assert all(r["reason"].startswith(reason) for r in bad)
    assert all(r["status"] == "ok" for r in rows if r["check_id"] != "diet")
    assert batch_api.calls["create"] == 1  # errors are not resubmitted within the run

    batch_api.fault = None  # a rerun retries exactly the unscored checks
    rerun = run_batch(small)
    assert (rerun.stats.cached, rerun.stats.judged, rerun.unscored) == (8, 2, 0)
    assert [len(lines) for lines in batch_api.request_files] == [10, 2]


def test_a_batch_that_fails_validation_leaves_its_checks_unscored(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.fail_validation = True
    report = run_batch(small)
    assert report.unscored == 10
    reasons = {r["reason"] for r in small.rows()}
    assert reasons == {"no result in batch batch_0 (failed: Bad file (fake).)"}


def test_malformed_replies_are_reasked_in_a_follow_up_batch(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.fault = on_check(DIET, "prose", first_ask_only=True)
    report = run_batch(small)
    assert report.unscored == 0
    assert [len(lines) for lines in batch_api.request_files] == [10, 2]
    reask = batch_api.request_files[1][0]["body"]["messages"]
    assert [m["role"] for m in reask] == ["system", "user", "assistant", "user"]
    assert reask[2]["content"] == "The answer looks fine to me."
    assert "not a valid verdict (no JSON object in reply" in reask[3]["content"]
    attempts = {r["check_id"]: r["attempts"] for r in small.rows() if r["model"] == "lab/alpha"}
    assert attempts["diet"] == 2
    assert attempts["identity"] == 1
    assert batch_tables(small.store)[1] == 0  # no re-ask left pending


def test_replies_that_stay_malformed_are_unscored_after_max_reasks(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.fault = on_check(DIET, "empty")
    report = run_batch(small)
    assert [len(lines) for lines in batch_api.request_files] == [10, 2, 2]  # 1 + 2 re-asks
    bad = [r for r in small.rows() if r["check_id"] == "diet"]
    assert report.unscored == 2
    assert {r["reason"] for r in bad} == {"unparseable: empty reply (after 3 attempts)"}
    assert {r["attempts"] for r in bad} == {3}


# -- transport ----------------------------------------------------------------------------


def test_transient_failures_of_the_batch_api_are_retried(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.flaky = [503, 429, 503]  # the upload fails three times, then succeeds
    report = run_batch(small)
    assert report.unscored == 0
    assert batch_api.calls["upload"] == batch_api.calls["create"] == 1
    assert batch_api.calls["http_503"] == 2
    assert batch_api.calls["http_429"] == 1


def test_rejected_credentials_stop_the_run_naming_the_variable(
    batch_api: FakeBatchAPI, small: Workspace, scale_env: pytest.MonkeyPatch
) -> None:
    batch_api.api_key = "right"
    scale_env.setenv("FAKE_API_KEY", "wrong")
    with pytest.raises(JudgeAuthError, match="set FAKE_API_KEY"):
        run_batch(small)
    assert batch_api.calls["upload"] == 0
    scale_env.setenv("FAKE_API_KEY", "right")
    assert run_batch(small).unscored == 0


# -- splitting ------------------------------------------------------------------------------


def test_requests_are_split_at_the_request_limit_keeping_responses_together(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    report = run_batch(small, max_requests=4)
    assert report.unscored == 0
    sizes = sorted(len(lines) for lines in batch_api.request_files)
    assert sizes == [3, 3, 4]  # responses of 3, 3, 2 and 2 checks, never cut in two
    response_of = {key: response for (response, _), key in small.key_map().items()}
    for lines in batch_api.request_files:
        responses = {response_of[line["custom_id"]] for line in lines}
        whole = {key for key, response in response_of.items() if response in responses}
        assert whole == {line["custom_id"] for line in lines}
    ids = Counter(line["custom_id"] for lines in batch_api.request_files for line in lines)
    assert len(ids) == 10
    assert set(ids.values()) == {1}


def test_the_file_writer_splits_at_the_byte_limit(tmp_path: Path) -> None:
    writer = BatchFileWriter(tmp_path, "t", max_requests=1000, max_bytes=250)
    line = b'{"custom_id":"k","body":"' + b"x" * 70 + b'"}\n'  # 98 bytes
    for i in range(5):
        writer.add([(f"k{i}", line)])
    writer.add([("huge", b"y" * 300 + b"\n")])
    files = writer.close()
    assert [f.requests for f in files] == [2, 2, 1]
    assert all(f.path.stat().st_size == f.bytes <= 250 for f in files)
    assert writer.too_large == [("huge", 301)]
    assert not list(tmp_path.glob(".*.tmp"))


# -- restarts -------------------------------------------------------------------------------


def test_a_restart_between_submit_and_download_collects_and_does_not_resubmit(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.hold = True  # the provider is still working when the first process stops
    with pytest.raises(BatchesPending, match="run the same command again"):
        run_batch(small, max_wait_s=0.05)
    jobs, _ = batch_tables(small.store)
    assert jobs == [("submitted", "batch_0", "in_progress")]
    assert store_rows(small.store) == {}

    batch_api.hold = False  # a new process: new store handle, new client, same store file
    events: list[str] = []
    report = run_batch(small, events)
    assert report.unscored == 0
    assert (report.stats.judged, report.stats.cached, report.stats.done) == (10, 0, 10)
    assert batch_api.calls["create"] == 1
    assert batch_api.calls["upload"] == 1
    assert set(batch_api.submitted.values()) == {1}
    assert any("resuming 1 batch job" in e for e in events)


def test_a_crash_after_create_before_the_id_was_recorded_adopts_the_batch(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.hold = True
    with pytest.raises(BatchesPending):
        run_batch(small, max_wait_s=0.05)
    with sqlite3.connect(small.store) as db:  # as if killed between create and the commit
        db.execute("UPDATE batch_jobs SET state = 'uploaded', batch_id = NULL")
    db.close()
    batch_api.hold = False
    report = run_batch(small)
    assert report.stats.judged == 10
    assert batch_api.calls["create"] == 1
    assert batch_api.calls["list"] == 1


# -- offline: vllm run-batch ----------------------------------------------------------------


def fake_run_batch(request_file: Path, out: Path, fault: Any = None) -> Path:
    """What ``vllm run-batch -i request_file -o out`` would write (output lines only)."""
    results = run_requests(request_file.read_bytes(), fault)
    lines = results["output"] + results["errors"]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


def test_write_only_then_ingest_is_the_offline_path(
    small: Workspace, tmp_path: Path, scale_env: Any
) -> None:
    scale_env.setenv("FAKE_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    batch = BatchSettings(directory=tmp_path / "files")
    written = write_batch_requests(small, batch)
    assert written.requests == 10
    assert len(written.files) == 1
    results = fake_run_batch(written.files[0].path, tmp_path / "out.jsonl", on_check(DIET, "prose"))

    report, counts = ingest_batch_results(small, [results])
    assert (counts.stored, counts.reasks) == (8, 2)
    assert report.unscored == 2  # the two re-asks are not judged yet

    # ingesting the same file twice changes nothing
    _again, counts2 = ingest_batch_results(small, [results])
    assert (counts2.stored, counts2.skipped, counts2.reasks) == (0, 10, 2)

    second = write_batch_requests(small, batch)
    assert (second.requests, second.reasks, second.cached) == (2, 2, 8)
    lines = [json.loads(x) for x in second.files[0].path.read_text().splitlines()]
    assert all(len(line["body"]["messages"]) == 4 for line in lines)
    final, counts3 = ingest_batch_results(
        small, [fake_run_batch(second.files[0].path, tmp_path / "out2.jsonl")]
    )
    assert (final.unscored, counts3.reasks) == (0, 0)
    assert {r["attempts"] for r in small.rows() if r["check_id"] == "diet"} == {2}


def test_ingest_skips_lines_of_other_runs(small: Workspace, tmp_path: Path, scale_env: Any) -> None:
    scale_env.setenv("FAKE_BASE_URL", "http://127.0.0.1:9/v1")
    stray = tmp_path / "stray.jsonl"
    body = {"choices": [{"message": {"content": '{"verdict": "meets", "explanation": ""}'}}]}
    stray.write_text(
        json.dumps({"custom_id": "f" * 64, "response": {"status_code": 200, "body": body}}) + "\n"
    )
    _, counts = ingest_batch_results(small, [stray])
    assert (counts.unknown, counts.stored) == (1, 0)
    assert store_rows(small.store) == {}


@pytest.mark.parametrize("judge", [None, "openai/gpt-4.1-mini"])
def test_spliced_request_lines_are_byte_for_byte_the_serialised_body(judge: str | None) -> None:
    """Also for a judge whose lines name their answer's prompt cache (``prompt_cache_key``,
    computed from the shared prefix, so the same for every check of the template)."""
    from gamut_eval.judge._backend_batch import _template, request_line
    from gamut_eval.judge._prompt import GUIDED, render_messages, render_response
    from gamut_eval.judge._wire_openai import initial_shape

    judge_settings = settings() if judge is None else settings(judge=judge)
    response = 'Un "panda" roux\n\tmange du bambou — 竹子 🐼 \\ </script> @@gamut-key@ <<<RESPONSE'
    variant = GUIDED[2] if judge else None
    rendered = (
        render_response("Quel animal ?\u2028", response, variant=variant)
        if variant
        else render_response("Quel animal ?\u2028", response)
    )
    template = _template(rendered, "fake-judge", judge_settings)
    assert template is not None
    for check in ['Mentions "bamboo".', "Names 竹子 🐼\nand\\or \u0000 things.  "]:
        messages = render_messages(rendered, check)
        body = initial_shape("fake-judge", judge_settings).body(
            "fake-judge", messages, judge_settings
        )
        assert template.line("k" * 64, check) == request_line("k" * 64, body)
        assert ("prompt_cache_key" in body) is (judge is not None)
    marked = render_response("Q?", "a response quoting @@gamut-check@@")
    assert _template(marked, "fake-judge", judge_settings) is None  # falls back to dumps
