"""The fake OpenAI-compatible server as a process: ``python -m gamut_eval.testing.fake_openai``.

The command line prints ``READY http://127.0.0.1:PORT`` on stdout once listening and serves
until SIGINT or SIGTERM. Example::

    python -m gamut_eval.testing.fake_openai --port 0 --latency-ms 100 --policy keyword

``start_fake_server_process`` runs it as a child, as benchmarks do: the parent blocks on the
READY line, so a benchmark never races a server that is still binding its port.
``stop_fake_server_process`` ends it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import gamut_eval
from gamut_eval.errors import InputError
from gamut_eval.testing._fake_openai import DEFAULT_MODELS, FakeOpenAIServer
from gamut_eval.testing._faults import FaultRule, load_fault_rules, serialise_fault_rules
from gamut_eval.testing._policies import FakeServerError

__all__ = [
    "CLI_MODULE",
    "READY_PREFIX",
    "build_parser",
    "main",
    "serve_until_signalled",
    "start_fake_server_process",
    "stop_fake_server_process",
]

READY_PREFIX = "READY "
CLI_MODULE = "gamut_eval.testing.fake_openai"


async def serve_until_signalled(server: FakeOpenAIServer, out: IO[str] | None = None) -> None:
    """Serve until SIGINT or SIGTERM, announcing ``READY <root url>`` on ``out`` (stdout)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C still interrupts
            loop.add_signal_handler(sig, stop.set)
    async with server:
        print(f"{READY_PREFIX}{server.root_url}", file=out or sys.stdout, flush=True)
        await stop.wait()


def _child_env() -> dict[str, str]:
    """The parent's environment, with this package importable even when not installed."""
    src = str(Path(gamut_eval.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def _read_ready_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The root URL from the child's READY line; a reader thread makes the wait boundable."""
    stream = proc.stdout
    if stream is None:
        raise FakeServerError("the fake server process must be started with stdout=PIPE")
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True)
    reader.start()
    try:
        line = lines.get(timeout=timeout_s)
    except queue.Empty:
        raise FakeServerError(f"the fake server printed no READY line in {timeout_s}s") from None
    if not line.startswith(READY_PREFIX):
        raise FakeServerError(
            f"the fake server printed {line!r} instead of a READY line (exit code {proc.poll()})"
        )
    return line.removeprefix(READY_PREFIX).strip()


def start_fake_server_process(
    *,
    latency_ms: float = 0.0,
    policy: str = "keyword",
    faults: Sequence[FaultRule] = (),
    api_key: str | None = None,
    models: Sequence[str] = (),
    port: int = 0,
    ready_timeout_s: float = 30.0,
) -> tuple[subprocess.Popen[str], str]:
    """Start ``python -m gamut_eval.testing.fake_openai``; return it and its ``/v1`` base URL.

    Stop it with :func:`stop_fake_server_process`. ``policy`` is a shipped policy name
    (``keyword`` or ``injectable``); ``models`` empty means the default model list.
    """
    with tempfile.TemporaryDirectory(prefix="fake-openai-") as tmp:
        args = [sys.executable, "-m", CLI_MODULE, "--port", str(port)]
        args += ["--latency-ms", str(latency_ms), "--policy", policy]
        args += [f"--model={m}" for m in models]
        if faults:
            faults_file = Path(tmp, "faults.json")
            faults_file.write_text(serialise_fault_rules(faults))
            args += ["--faults-json", str(faults_file)]
        if api_key is not None:
            args += ["--api-key", api_key]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=_child_env())
        try:
            root_url = _read_ready_line(proc, ready_timeout_s)  # faults file read by now
        except BaseException:
            stop_fake_server_process(proc)
            raise
    return proc, f"{root_url}/v1"


def stop_fake_server_process(proc: subprocess.Popen[str], timeout_s: float = 10.0) -> int:
    """Terminate the child (kill it if it lingers), close its pipe; return its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.returncode


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so its help can be tested and documented)."""
    parser = argparse.ArgumentParser(
        prog="python -m gamut_eval.testing.fake_openai",
        description="Deterministic fake OpenAI-compatible server on 127.0.0.1 (tests, benchmarks).",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: a free one)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before each reply")
    parser.add_argument(
        "--policy", choices=("keyword", "injectable", "lenient", "fixed"), default="keyword"
    )
    parser.add_argument("--faults-json", help="JSON file: a list of fault rules")
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
    parser.add_argument(
        "--reply-tokens",
        type=int,
        help="tokens every reply needs: one asked with a smaller max_tokens is cut in half "
        "(finish_reason length)",
    )
    parser.add_argument(
        "--model",
        action="append",
        help=f"model name to list (repeatable; default {DEFAULT_MODELS[0]})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, serve until signalled; exit code 2 on a bad faults file."""
    args = build_parser().parse_args(argv)
    try:
        faults = load_fault_rules(args.faults_json) if args.faults_json else []
    except (OSError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = FakeOpenAIServer(
        policy=args.policy,
        faults=faults,
        latency_ms=args.latency_ms,
        models=args.model or DEFAULT_MODELS,
        api_key=args.api_key,
        port=args.port,
        reply_tokens=args.reply_tokens,
    )
    asyncio.run(serve_until_signalled(server))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
