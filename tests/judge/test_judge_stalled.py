"""A judge that stops working mid-run stops the run: every request failing for
``dead_after_s``, or most of the recent checks unscored, ends it naming the endpoint, what
failed and how many checks are done; what was judged is kept and a rerun continues. A few
early failures never stop a run. A reply cut at the length bound is re-asked with more
room and a shorter explanation before it counts as unscored."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner
from judge_helpers import (
    JUDGE,
    MOKA,
    StartServer,
    Workspace,
    response_row,
    settings,
    store_rows,
    synthetic_records,
    synthetic_responses,
)

from gamut_eval.cli import cli
from gamut_eval.judge import JudgeServerGone, JudgeStalled
from gamut_eval.judge._pass import RECENT_CHECKS
from gamut_eval.judge._prompt import REASK_SHORTER
from gamut_eval.testing import FaultRule, RequestContext, verdict_json

pytestmark = pytest.mark.usefixtures("quick")  # millisecond backoffs

JUDGED_FIRST = 7
"""Requests the server answers before it stops working."""


def _ok(ws: Workspace) -> int:
    return sum(status == "ok" for status, _, _, _ in store_rows(ws.store).values())


@pytest.mark.parametrize("fault", ["http_500", "timeout"])
def test_a_judge_that_fails_every_request_for_dead_after_s_stops_the_run(
    small: Workspace, serve: StartServer, fault: Any
) -> None:
    """One request at a time: the first seven are answered, then every request fails (a
    500, or no reply within the timeout); the run stops once they have failed for
    ``dead_after_s``, and a rerun against a healthy server sends only the rest."""
    server = serve(faults=[FaultRule(fault, after_n=JUDGED_FIRST, timeout_s=30)])
    total = small.n_checks
    # a timeout long enough for a loaded machine's replies, short enough to fail fast
    quick = {"timeout_s": 1.0, "dead_after_s": 2.5} if fault == "timeout" else {}
    stalled = settings(concurrency=1, max_retries=20, **({"dead_after_s": 0.3} | quick))
    with pytest.raises(JudgeStalled) as caught:
        small.run(stalled)
    message = str(caught.value)
    assert server.base_url in message
    assert "stopped working" in message
    assert ("HTTP 500" if fault == "http_500" else "timed out") in message
    left = total - JUDGED_FIRST
    assert f"{left} of {total} checks are left unscored and {JUDGED_FIRST} done" in message
    assert caught.value.settings[0] == "dead_after_s"
    assert isinstance(caught.value, JudgeServerGone)  # the run stops; nothing is scored
    assert _ok(small) == JUDGED_FIRST
    assert not small.out.exists()

    healthy = serve()
    report = small.run(settings(concurrency=1))
    assert len(healthy.requests) == left
    assert (report.rows, report.unscored, report.stats.cached) == (total, 0, JUDGED_FIRST)


def test_a_few_early_failures_never_stop_a_run(small: Workspace, serve: StartServer) -> None:
    server = serve(faults=[FaultRule("http_500", first_n=3)])
    report = small.run(settings(concurrency=1, dead_after_s=0.3))
    assert (report.rows, report.unscored) == (small.n_checks, 0)
    assert [r.status for r in server.requests[:4]] == [500, 500, 500, 200]


@pytest.fixture
def many(make_workspace: Callable[..., Workspace]) -> Workspace:
    """150 checks (5 questions of 5, six models)."""
    records = synthetic_records(5, 5)
    return make_workspace(records, synthetic_responses(records, 6))


def test_a_judge_whose_recent_checks_are_mostly_unscored_stops_the_run(
    many: Workspace, serve: StartServer
) -> None:
    """After ten good replies, prose: at the 100th check, 90 of the last 100 are unscored
    (at least 80 stop the run)."""
    serve(faults=[FaultRule("prose", after_n=10)])
    total = many.n_checks
    with pytest.raises(JudgeStalled) as caught:
        many.run(settings(concurrency=1, max_reasks=0))
    message = str(caught.value)
    assert f"90 of the last {RECENT_CHECKS} checks ended unscored (unparseable x90)" in message
    assert f"{total - 10} of {total} checks are left unscored and 10 done" in message
    rows = store_rows(many.store)
    assert Counter(status for status, _, _, _ in rows.values()) == {"ok": 10, "unscored": 90}

    healthy = serve()
    report = many.run(settings(concurrency=1, max_reasks=0))
    assert len(healthy.requests) == total - 10
    assert (report.rows, report.unscored) == (total, 0)


def test_a_few_unscored_checks_never_stop_a_run(many: Workspace, serve: StartServer) -> None:
    serve(faults=[FaultRule("prose", first_n=79)])
    report = many.run(settings(concurrency=1, max_reasks=0))
    assert (report.rows, report.unscored) == (many.n_checks, 79)


# -- a reply cut at the length bound -------------------------------------------------------------


def _capture(seen: list[dict[str, Any]]) -> Callable[[dict[str, Any], RequestContext], str]:
    def policy(request: dict[str, Any], ctx: RequestContext) -> str:
        seen.append(request)
        return verdict_json("meets", "a long explanation " * 10)

    return policy


def _last_user(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else ""


def test_a_reply_cut_at_the_length_bound_is_reasked_with_more_room(
    small: Workspace, serve: StartServer
) -> None:
    """The server needs 700 tokens for each reply; at 400 it cuts it (finish_reason
    length). Each check is asked again with twice the room and a shorter explanation
    asked for, and then graded."""
    seen: list[dict[str, Any]] = []
    serve(policy=_capture(seen), reply_tokens=700)
    report = small.run(settings(max_tokens=400))
    n = small.n_checks
    assert (report.rows, report.unscored) == (n, 0)
    assert Counter(r["max_tokens"] for r in seen) == {400: n, 800: n}
    reasks = [r for r in seen if r["max_tokens"] == 800]
    assert all(_last_user(r) == REASK_SHORTER for r in reasks)
    assert all(row["attempts"] == 2 for row in small.rows())


def test_a_reply_that_never_fits_is_unscored_saying_it_was_cut(
    small: Workspace, serve: StartServer
) -> None:
    seen: list[dict[str, Any]] = []
    serve(policy=_capture(seen), reply_tokens=100_000)
    report = small.run(settings(max_tokens=1500, max_reasks=2))
    n = small.n_checks
    assert report.unscored == n
    # doubled each time, up to 4096
    assert Counter(r["max_tokens"] for r in seen) == {1500: n, 3000: n, 4096: n}
    reasons = [row["reason"] for row in small.rows()]
    assert all(r.startswith("unparseable: cut at the length limit") for r in reasons)


# -- as the command line shows it -------------------------------------------------------------


def test_the_command_line_ends_a_stalled_run_with_exit_1_naming_the_way_out(
    small: Workspace, serve: StartServer
) -> None:
    server = serve(faults=[FaultRule("http_503", after_n=JUDGED_FIRST)])
    argv = [
        "judge",
        *("--dataset", str(small.dataset_path), "--responses", str(small.responses_path)),
        *("--judge", JUDGE, "--backend", "fast", "--no-probe", "--concurrency", "1"),
        *("--store", str(small.store), "--out", str(small.out)),
        *("--dead-after", "0.3", "--max-retries", "20"),
    ]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert message.count("error:") == 1
    assert "Traceback" not in result.output
    assert server.base_url in message
    assert "HTTP 503" in message
    assert f"{small.n_checks - JUDGED_FIRST} of {small.n_checks} checks are left" in message
    assert "(option --dead-after)" in message
    assert _ok(small) == JUDGED_FIRST
    assert not small.out.exists()


def test_a_pass_reports_progress_while_nothing_settles(
    make_workspace: Callable[..., Workspace], serve: StartServer
) -> None:
    """A reply that takes 1.5 s: the display hears from the pass before it comes (so a
    judge that stalls is seen to, on the progress line and in the plain lines)."""
    ws = make_workspace([MOKA], [response_row("q-moka", "lab/alpha", "A moka pot.")])
    serve(latency_ms=1500)
    seen: list[tuple[str, int]] = []
    ws.run(settings(concurrency=1), on_event=lambda e: seen.append((e.kind, e.stats.judged)))
    assert ("progress", 0) in seen[1:]  # after the start, before the first check settled
