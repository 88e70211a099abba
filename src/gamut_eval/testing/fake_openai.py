"""Command line of the fake OpenAI-compatible server: ``python -m gamut_eval.testing.fake_openai``.

Prints ``READY http://127.0.0.1:PORT`` on stdout once listening and serves until SIGINT or
SIGTERM. Example::

    python -m gamut_eval.testing.fake_openai --port 0 --latency-ms 100 --policy keyword
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from gamut_eval.errors import InputError
from gamut_eval.testing._fake_openai import DEFAULT_MODELS, FakeOpenAIServer
from gamut_eval.testing._faults import load_fault_rules
from gamut_eval.testing._process import serve_until_signalled

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so its help can be tested and documented)."""
    parser = argparse.ArgumentParser(
        prog="python -m gamut_eval.testing.fake_openai",
        description="Deterministic fake OpenAI-compatible server on 127.0.0.1 (tests, benchmarks).",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: a free one)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before each reply")
    parser.add_argument("--policy", choices=("keyword", "injectable", "fixed"), default="keyword")
    parser.add_argument("--faults-json", help="JSON file: a list of fault rules")
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
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
    )
    asyncio.run(serve_until_signalled(server))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
