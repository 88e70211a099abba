"""Start-up time of the ``gamut`` command.

``gamut --help`` and ``gamut <command> --help`` must take at most 2.5x the time of
``python -c "import click, rich, pydantic"`` (the libraries every command needs): the
command group lists commands without importing their modules, and a command imports its
heavy dependencies only when it runs. Each command runs N times in fresh subprocesses,
interleaved with the baseline so machine noise hits both alike; the medians are compared.

    python bench/bench_startup.py [N] [--all]

``--all`` also times ``--help`` of every command (for information; the targets are
``gamut --help``, ``gamut validate --help`` and ``gamut compile --help``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "src"))
from _common import verdict_line  # this checkout's sources, not an installed copy

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 2.5
BASELINE = ("-c", "import click, rich, pydantic")
TARGETS = ("", "validate", "compile")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def _once(args: tuple[str, ...], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _help_args(command: str) -> tuple[str, ...]:
    return ("-m", "gamut_eval", *command.split(), "--help")


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--all"]
    runs = int(argv[0]) if argv else 15
    env = _env()
    commands = list(TARGETS)
    if "--all" in sys.argv:
        from gamut_eval.cli import COMMANDS

        commands += [c for c in COMMANDS if c not in TARGETS]
    cases = {"baseline": BASELINE} | {c or "(group)": _help_args(c) for c in commands}
    for args in cases.values():  # warm the file cache and the bytecode
        _once(args, env)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, args in cases.items():
            times[name].append(_once(args, env))
    base = statistics.median(times["baseline"])
    print(f"baseline `python -c \"import click, rich, pydantic\"`: {base * 1000:.0f} ms "
          f"(median of {runs})")  # fmt: skip
    for name, samples in times.items():
        if name == "baseline":
            continue
        median = statistics.median(samples)
        label = "gamut --help" if name == "(group)" else f"gamut {name} --help"
        print(f"{label}: {median * 1000:.0f} ms")
        if name == "(group)" or name in TARGETS:
            print(verdict_line(f"{label} / baseline", median / base, BUDGET, unit="x"))
        else:
            print(f"  {median / base:.2f}x the baseline (information)")


if __name__ == "__main__":
    main()
