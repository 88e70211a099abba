"""The default judge settings against llama-cpp-python's server, which answers one
request at a time and names no slots: the client finds its pace by latency, so the server
is never asked to hold many more requests than it serves (counted at a proxy in front of
it, not timed), and every check still ends with a verdict or a reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from real_helpers import JUDGE, SLOW_SERVER, CountingProxy
from test_real_judge import one_answer

from gamut_eval._tables import read_rows
from gamut_eval.cli import cli


def test_default_settings_do_not_queue_far_past_the_servers_slot(
    llama_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, responses = one_answer(tmp_path)
    out = tmp_path / "verdicts.jsonl"
    with CountingProxy(llama_env) as proxy:
        monkeypatch.setenv("LLAMA_BASE_URL", proxy.url)
        argv = ["judge", "--dataset", str(dataset), "--responses", str(responses)]
        argv += ["--judge", JUDGE, "--out", str(out), "--store", str(tmp_path / "s.sqlite")]
        argv += ["--max-unscored-rate", "1", "--judge-max-tokens", "160", *SLOW_SERVER]
        result = CliRunner().invoke(cli, argv)  # --concurrency is 64 by default
    assert result.exit_code == 0, result.output
    rows = [row for _, row in read_rows(out)]
    assert len(rows) >= 10
    assert proxy.chats >= len(rows) + 1  # the probe, then one request per check at least
    # One slot: the start (2 in flight) doubled once at most, never the 64 allowed nor
    # the answer's checks all at once.
    assert proxy.most <= 4
