"""The real-server tier's llama.cpp build: portable flags, one build per machine, reused,
never half-written, and never pip's cached native build."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "llama_wheel.py"


@pytest.fixture
def wheel() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llama_wheel", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_build(
    calls: list[Path], *, pause_s: float = 0.0
) -> Callable[[Path, str, tuple[str, ...]], None]:
    """A ``_build`` that writes what pip would, into a staging folder renamed into place."""

    def build(folder: Path, version: str, flags: tuple[str, ...]) -> None:
        calls.append(folder)
        staging = folder.with_name(folder.name + ".staging")
        staging.mkdir()
        time.sleep(pause_s)
        (staging / f"llama_cpp_python-{version}-py3-none-linux_x86_64.whl").write_bytes(b"w")
        (staging / "flags.json").write_text(json.dumps({"flags": list(flags)}))
        staging.rename(folder)

    return build


def test_the_flags_build_no_native_avx512_or_amx_kernels(wheel: ModuleType) -> None:
    flags = wheel.build_flags()
    assert "-DGGML_NATIVE=OFF" in flags
    assert not [f for f in flags if ("AMX" in f or "AVX512" in f) and f.endswith("=ON")]


def test_the_folder_is_named_by_version_and_flags(wheel: ModuleType, tmp_path: Path) -> None:
    one = wheel.wheel_folder(tmp_path, "0.3.36", ("-DGGML_NATIVE=OFF",))
    assert one == wheel.wheel_folder(tmp_path, "0.3.36", ("-DGGML_NATIVE=OFF",))
    assert one != wheel.wheel_folder(tmp_path, "0.3.36", ("-DGGML_NATIVE=ON",))
    assert one != wheel.wheel_folder(tmp_path, "0.3.37", ("-DGGML_NATIVE=OFF",))
    assert one.parent == tmp_path
    assert "0.3.36" in one.name


def test_a_built_wheel_is_reused_and_two_builders_build_once(
    wheel: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(wheel, "_build", fake_build(calls, pause_s=0.3))
    found: list[Path] = []
    threads = [
        threading.Thread(target=lambda: found.append(wheel.portable_wheel(tmp_path, "0.3.36")))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1  # the second waited on the lock, then found the wheel
    assert found[0] == found[1]
    assert found[0].name.endswith(".whl")
    assert wheel.portable_wheel(tmp_path, "0.3.36") == found[0]
    assert len(calls) == 1  # a third call builds nothing


def test_a_folder_without_its_record_is_rebuilt(
    wheel: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = wheel.wheel_folder(tmp_path, "0.3.36", wheel.build_flags())
    folder.mkdir(parents=True)
    (folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl").write_bytes(b"native?")
    calls: list[Path] = []
    monkeypatch.setattr(wheel, "_build", fake_build(calls))
    built = wheel.portable_wheel(tmp_path, "0.3.36")
    assert calls == [folder]
    assert built.read_bytes() == b"w"
