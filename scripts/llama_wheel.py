"""Build llama-cpp-python portably, once per machine, and print the wheel's path.

pip's own build of llama-cpp-python compiles llama.cpp with ``GGML_NATIVE=ON``: on a
Xeon that reports AMX it compiles the AMX matrix kernels, and the server dies with
SIGSEGV on the first prompt longer than a few tokens. pip also caches the wheel it built
keyed by the source archive, not by the build flags, so a crashing wheel comes back even
after ``CMAKE_ARGS`` changes. This script never asks pip's cache: it builds the wheel
with the flags below (no native, AVX-512 or AMX kernels; AVX2, FMA and F16C) into a
folder of the project's own, outside the clone, named by version, Python and flags, and
reuses it when present. The folder is written under a lock and renamed into place, so two
``make test`` runs on one machine neither race nor build twice.

Usage: ``python scripts/llama_wheel.py [--version V] [--cache DIR]``; prints the wheel path.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

VERSION = "0.3.36"

# x86-64: the kernels every x86-64 machine of this project's kind runs; never the native,
# AVX-512 or AMX ones (see docs/decisions.md, "A portable llama.cpp").
_X86_FLAGS = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_CPU_ALL_VARIANTS=OFF",
    "-DGGML_BACKEND_DL=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_AVX512=OFF",
    "-DGGML_AVX512_VBMI=OFF",
    "-DGGML_AVX512_VNNI=OFF",
    "-DGGML_AVX512_BF16=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
)
_OTHER_FLAGS = ("-DGGML_NATIVE=OFF",)


def build_flags() -> tuple[str, ...]:
    """The CMake flags the wheel is built with on this machine's architecture."""
    if platform.machine().lower() in {"x86_64", "amd64"}:
        return _X86_FLAGS
    return _OTHER_FLAGS


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gamut-eval" / "wheels"


def wheel_folder(cache: Path, version: str, flags: tuple[str, ...]) -> Path:
    """The folder one build lives in: named by version, interpreter, platform and flags."""
    key = json.dumps([version, sys.implementation.cache_tag, sysconfig.get_platform(), flags])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache / f"llama_cpp_python-{version}-{sys.implementation.cache_tag}-{digest}"


def _finished_wheel(folder: Path) -> Path | None:
    if not (folder / "flags.json").is_file():
        return None
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    return wheels[0] if len(wheels) == 1 else None


def _build(folder: Path, version: str, flags: tuple[str, ...]) -> None:
    staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    staging.chmod(0o755)
    try:
        env = dict(os.environ)
        env["CMAKE_ARGS"] = " ".join(flags)
        env["FORCE_CMAKE"] = "1"
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        command = [
            sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-cache-dir",
            "--no-binary", "llama-cpp-python", f"llama-cpp-python=={version}",
            "--wheel-dir", str(staging),
        ]  # fmt: skip
        print(f"building llama-cpp-python {version} with {env['CMAKE_ARGS']}", file=sys.stderr)
        subprocess.run(command, env=env, check=True, stdout=sys.stderr)
        record = {"version": version, "flags": list(flags), "python": sys.version}
        (staging / "flags.json").write_text(json.dumps(record, indent=1) + "\n")
        if _finished_wheel(staging) is None:
            raise SystemExit(f"llama_wheel: pip wrote no single wheel into {staging}")
        staging.rename(folder)  # atomic: a reader sees no folder or a whole one
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def portable_wheel(cache: Path, version: str) -> Path:
    """The cached portable wheel, built first if this machine has none."""
    flags = build_flags()
    folder = wheel_folder(cache, version, flags)
    found = _finished_wheel(folder)
    if found is not None:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / (folder.name + ".lock")).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second builder waits, then finds the wheel
        found = _finished_wheel(folder)
        if found is None:
            if folder.exists():  # a folder without its record is not ours to trust
                shutil.rmtree(folder)
            _build(folder, version, flags)
            found = _finished_wheel(folder)
    assert found is not None
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--cache", type=Path, default=default_cache())
    args = parser.parse_args()
    print(portable_wheel(args.cache, args.version))


if __name__ == "__main__":
    main()
