"""``gamut view``: a run's HTML report in a browser, or served on localhost.

The report is RUN_DIR/report.html, written by ``gamut report`` (and ``gamut demo``); a run
without one (it is removed whenever the verdicts change) gets it written first, with the
report's defaults. A machine with a graphical browser opens the file itself; a headless
one (Linux without ``DISPLAY`` or ``WAYLAND_DISPLAY``, or ``--no-browser``, or ``--port``)
gets a small HTTP server on the loopback address that answers ``/`` (and
``/report.html``) with the report and nothing else: the run folder's other files (the
verdict store, the answers) are never served.
"""

from __future__ import annotations

import os
import sys
import threading
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from gamut_eval.errors import InputError

LOOPBACK = "127.0.0.1"
_PATHS = ("/", "/report.html", "/index.html")


def ensure_report(run_dir: Path) -> tuple[Path, bool]:
    """RUN_DIR/report.html, written first when it is missing; returns (path, written now)."""
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such run folder (give a folder `gamut run` wrote)")
    path = run_dir / "report.html"
    if path.is_file():
        return path, False
    from gamut_eval.analysis._export import write_report
    from gamut_eval.analysis._report import report_for_run

    write_report(report_for_run(run_dir, explanations=True), "html", path)
    return path, True


def has_browser() -> bool:
    """Whether a graphical browser can be opened here: not on a Linux (or BSD) machine
    without a display, where Python would fall back to a text browser in the terminal."""
    unix = sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd"))
    if unix and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def open_in_browser(url: str) -> bool:
    """Open ``url`` in the default browser; ``False`` when none would open it."""
    try:
        return webbrowser.open(url, new=2)
    except webbrowser.Error:
        return False


class _Handler(BaseHTTPRequestHandler):
    server: ReportServer

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        if self.path.split("?", 1)[0] not in _PATHS:
            self.send_error(HTTPStatus.NOT_FOUND, "only the report is served here: /")
            return
        try:
            data = self.server.report.read_bytes()  # read per request: a rewrite shows up
        except OSError as exc:
            self.send_error(HTTPStatus.NOT_FOUND, f"{self.server.report}: {exc.strerror}")
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the command prints the URL; request lines would bury it."""


class ReportServer(ThreadingHTTPServer):
    """Serves one report file on the loopback address (``port`` 0: a free port)."""

    daemon_threads = True

    def __init__(self, report: Path, port: int = 0) -> None:
        self.report = report
        try:
            super().__init__((LOOPBACK, port), _Handler)
        except OSError as exc:
            raise InputError(
                f"port {port}: cannot listen on {LOOPBACK}:{port} ({exc.strerror}); "
                "choose another port, or 0 for any free one",
                setting="port",
            ) from None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}/"

    def start(self) -> threading.Thread:
        """Serve in a background thread (stop with ``shutdown()`` then ``server_close()``)."""
        thread = threading.Thread(target=self.serve_forever, name="gamut-view", daemon=True)
        thread.start()
        return thread
