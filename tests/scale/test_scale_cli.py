"""``gamut judge --backend batch`` and ``--dry-run`` as users run them: kill -9 between
submit and download, the offline write/ingest steps, the dry-run counts and costs."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fake_batch import FakeBatchAPI, run_requests
from judge_helpers import JUDGE, Workspace, verdicts_by_check

from gamut_eval.cli import cli
from gamut_eval.judge import render_messages, render_response
from gamut_eval.testing import FakeOpenAIServer


def args(ws: Workspace, *extra: str) -> list[str]:
    return [
        "judge",
        "--dataset",
        str(ws.dataset_path),
        "--responses",
        str(ws.responses_path),
        "--judge",
        JUDGE,
        "--store",
        str(ws.store),
        "--out",
        str(ws.out),
        "--no-probe",  # the fake batch API serves no chat completions
        *extra,
    ]


def invoke(*argv: str) -> Result:
    return CliRunner().invoke(cli, list(argv))


def flat(text: str) -> str:
    """Output with line wraps and table rules undone."""
    for rule in "│┃┌┐└┘├┤┬┴┼─━":
        text = text.replace(rule, " ")
    return " ".join(text.split())


def job_states(store: Path) -> list[str]:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1) as db:
            states = [r[0] for r in db.execute("SELECT state FROM batch_jobs")]
        db.close()
    except sqlite3.Error:
        return []
    return states


def test_help_lists_the_scale_options_after_the_online_ones() -> None:
    result = invoke("judge", "--help")
    assert result.exit_code == 0
    text = flat(result.output)
    assert "[auto|fast|inspect|batch|ray]" in text
    online = max(text.index("--wait-for-store"), text.index("--dry-run"))
    assert online < text.index("Batch backend:") < text.index("--batch-dir")
    assert text.index("--batch-dir") < text.index("Ray backend:") < text.index("--ray-vllm-tp")
    run_help = flat(invoke("run", "--help").output)
    assert "[auto|fast|inspect]" in run_help
    assert "--batch-dir" not in run_help  # a run scores as soon as verdicts exist: online only
    assert "--ray-address" not in run_help


def test_kill_9_between_submit_and_download_then_the_rerun_collects(
    batch_api: FakeBatchAPI, small: Workspace
) -> None:
    batch_api.hold = True
    command = [
        sys.executable,
        "-m",
        "gamut_eval",
        *args(small, "--backend", "batch", "--batch-poll", "0.02"),
    ]
    victim = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    try:
        deadline = time.monotonic() + 60
        while job_states(small.store) != ["submitted"] or batch_api.calls["get"] < 2:
            assert victim.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(victim.pid, signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    assert batch_api.calls["create"] == 1

    batch_api.hold = False
    result = invoke(*args(small, "--backend", "batch", "--batch-poll", "0.01"))
    assert result.exit_code == 0, result.output
    assert "resuming 1 batch job" in flat(result.output)
    assert batch_api.calls["create"] == batch_api.calls["upload"] == 1
    assert set(batch_api.submitted.values()) == {1}
    rows = verdicts_by_check(small.rows())
    assert len(rows) == 10
    assert all(status == "ok" for status, _ in rows.values())


def test_write_only_and_ingest_from_the_command_line(
    small: Workspace, tmp_path: Path, scale_env: pytest.MonkeyPatch
) -> None:
    scale_env.setenv("FAKE_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    folder = tmp_path / "batches"
    result = invoke(
        *args(small, "--backend", "batch", "--batch-write-only", "--batch-dir", str(folder))
    )
    assert result.exit_code == 0, result.output
    assert "vllm run-batch" in flat(result.output)
    [request_file] = sorted(folder.glob("*.jsonl"))
    results = run_requests(request_file.read_bytes(), None)
    out = tmp_path / "results.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in results["output"]))
    result = invoke(*args(small, "--backend", "batch", "--batch-ingest", str(out)))
    assert result.exit_code == 0, result.output
    assert "ingested 10 result lines (10 verdict rows" in flat(result.output)
    assert len(small.rows()) == 10


def test_batch_only_flags_need_the_batch_backend(small: Workspace) -> None:
    result = invoke(*args(small, "--batch-write-only"))
    assert result.exit_code == 2
    assert "--batch-write-only and --batch-ingest need --backend batch" in result.output


# -- dry run --------------------------------------------------------------------------------

PRICES = """\
currency: USD
models:
  fake-judge:
    input: 2000.0
    cached_input: 500.0
    output: 8000.0
    batch_input: 1000.0
    batch_output: 4000.0
"""


def expected_tokens(ws: Workspace) -> tuple[int, int, int]:
    """(prompt, shared-prefix, cacheable) tokens estimated as the dry run does: characters
    / 4 of each response's prefix (once per check) and of its checks, rendered here
    independently; a cache serves the prefix of every check of a response but the first."""
    dataset = ws.dataset()
    records, checklists = dataset.by_id(), dataset.checklists()
    prompt = prefix_total = cacheable = 0
    for row in ws.responses:
        question = records[row["question_id"]].question_for(row["setting"])
        rendered = render_response(question, row["response"])
        checks = checklists[row["question_id"]].checks
        first = render_messages(rendered, checks[0].text)
        prefix = (len(first[0]["content"]) + first[1]["content"].index("# Check\n")) // 4
        tails = sum(
            len(render_messages(rendered, c.text)[1]["content"].split("# Check\n")[-1]) + 8
            for c in checks
        )
        prompt += prefix * len(checks) + tails // 4
        prefix_total += prefix * len(checks)
        cacheable += prefix * (len(checks) - 1)
    return prompt, prefix_total, cacheable


def test_dry_run_counts_tokens_and_prices_every_mode_and_sends_nothing(
    chat_server: Callable[..., FakeOpenAIServer], small: Workspace, tmp_path: Path
) -> None:
    server = chat_server()
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES)
    result = invoke(*args(small, "--dry-run", "--prices", str(prices), "--output-tokens", "50"))
    assert result.exit_code == 0, result.output
    assert server.requests == []
    assert not small.store.exists()
    assert not small.out.exists()
    prompt, prefix, cacheable = expected_tokens(small)
    text = flat(result.output)
    assert "requests to send 10" in text
    assert f"prompt tokens (estimated) {prompt:,}" in text
    assert "output tokens (estimated) 500" in text
    assert "output tokens (at most) 4,000" in text
    assert f"shared-prefix fraction {100 * prefix / prompt:.1f}%" in text
    standard = (prompt * 2000 + 500 * 8000) / 1e6
    batch = (prompt * 1000 + 500 * 4000) / 1e6
    assert f"cost: standard {standard:,.2f} USD" in text
    assert f"cost: batch API {batch:,.2f} USD" in text
    cached = ((prompt - cacheable) * 2000 + cacheable * 500 + 500 * 8000) / 1e6
    assert f"cost: with prompt caching {cached:,.2f} USD" in text
    assert f"prompt tokens a prefix cache can serve {cacheable:,}" in text


def test_dry_run_leaves_out_what_the_store_already_holds(
    chat_server: Callable[..., FakeOpenAIServer], small: Workspace
) -> None:
    server = chat_server()
    assert invoke(*args(small, "--backend", "fast")).exit_code == 0
    sent = len(server.requests)
    result = invoke(*args(small, "--dry-run"))
    assert result.exit_code == 0, result.output
    assert "requests to send 0" in flat(result.output)
    assert "already in the store / repeated 10" in flat(result.output)
    assert "cost: standard n/a" in flat(result.output)
    assert len(server.requests) == sent


def test_a_bad_price_table_is_an_input_error_naming_the_file_and_field(
    small: Workspace, tmp_path: Path, scale_env: pytest.MonkeyPatch
) -> None:
    scale_env.setenv("FAKE_BASE_URL", "http://127.0.0.1:9/v1")
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  fake-judge:\n    input: -1\n    output: 1\n    extra: 2\n")
    result = invoke(*args(small, "--dry-run", "--prices", str(prices)))
    assert result.exit_code == 2
    assert f"{prices}:models.fake-judge.input" in flat(result.output)
    assert f"{prices}:models.fake-judge.extra" in flat(result.output)
