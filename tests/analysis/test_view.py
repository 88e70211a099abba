"""``gamut view``: the report opened in a browser, or served on localhost when there is none
(started as a user starts it, fetched over HTTP, stopped with Ctrl+C)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

import gamut_eval
import gamut_eval.analysis as analysis
from gamut_eval.analysis import _view as view_module
from gamut_eval.cli import cli
from gamut_eval.testing import synthetic_run

SRC = str(Path(gamut_eval.__file__).resolve().parents[1])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "run"
    return synthetic_run(path, models=["m/a", "m/b"], judges=["j/x"], questions=6, checks=4)


def _headless_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _serve(run_dir: Path, *args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start ``gamut view`` and read its output up to the URL it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gamut_eval", "view", str(run_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_headless_env(),
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # ends when the process does, so a crash cannot hang here
        lines.append(line)
        if line.startswith("serving "):
            return process, line.split(" at ", 1)[1].split()[0], lines
    process.wait(timeout=30)
    pytest.fail(f"gamut view exited {process.returncode} without serving: {''.join(lines)}")


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)  # Ctrl+C
    rest, _ = process.communicate(timeout=30)
    assert process.returncode == 0, rest
    return rest


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def test_no_browser_serves_the_report_it_writes_when_missing(run_dir: Path) -> None:
    (run_dir / "report.html").unlink(missing_ok=True)
    process, url, lines = _serve(run_dir, "--no-browser", "--port", "0")
    try:
        assert url.startswith("http://127.0.0.1:")
        assert any("(written now)" in line for line in lines)
        report = (run_dir / "report.html").read_bytes()
        assert report.startswith(b"<!DOCTYPE html>")
        assert _get(url) == (200, report)
        assert _get(url + "report.html") == (200, report)
        # nothing else of the run folder is served
        assert _get(url + "run.json")[0] == 404
        assert _get(url + "../run.json")[0] == 404
    finally:
        if process.poll() is None:
            assert "stopped" in _stop(process)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)


def test_a_headless_machine_serves_without_being_asked(run_dir: Path) -> None:
    """No DISPLAY and no WAYLAND_DISPLAY: no browser to open, so the URL is printed."""
    process, url, lines = _serve(run_dir)
    try:
        assert not any("(written now)" in line for line in lines)  # the report was there
        status, body = _get(url)
        assert status == 200
        assert body == (run_dir / "report.html").read_bytes()
    finally:
        _stop(process)


def test_a_given_port_is_used_and_a_busy_one_is_refused(run_dir: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    process, url, _ = _serve(run_dir, "--port", str(free))
    try:
        assert url == f"http://127.0.0.1:{free}/"
        busy = CliRunner().invoke(cli, ["view", str(run_dir), "--port", str(free)])
        assert busy.exit_code == 2
        assert f"port {free}: cannot listen on 127.0.0.1:{free}" in busy.stderr
        assert busy.stderr.strip().endswith("(option --port)")  # the command line adds it
    finally:
        _stop(process)


def test_with_a_browser_the_report_file_is_opened(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    # the command reaches the viewer through the package's face: patch it there
    monkeypatch.setattr(analysis, "has_browser", lambda: True)
    monkeypatch.setattr(analysis, "open_in_browser", lambda url: opened.append(url) or True)
    result = CliRunner().invoke(cli, ["view", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert opened == [(run_dir / "report.html").resolve().as_uri()]
    assert "in the browser" in result.stdout


def test_no_display_means_no_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert view_module.has_browser() is False


def test_a_folder_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    missing = CliRunner().invoke(cli, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "no such run folder" in missing.stderr
    empty = CliRunner().invoke(cli, ["view", str(tmp_path), "--no-browser"])
    assert empty.exit_code == 2
    assert str(tmp_path) in empty.stderr
    assert not (tmp_path / "report.html").exists()
