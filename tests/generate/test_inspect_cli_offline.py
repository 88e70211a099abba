"""The offline smoke run from Inspect's own command line, with no network:

    inspect eval gamut_eval/gamut --model mockllm/model -T judge=gamut/offline --limit 3

mockllm reports no token usage, so Inspect counts tokens with tiktoken's o200k_base
encoding, which tiktoken would download; gamut-eval ships it and seeds tiktoken's cache.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

import gamut_eval
from gamut_eval.generate._tokens import O200K_SHA256, O200K_URL, ensure_o200k_base

SRC = str(Path(gamut_eval.__file__).resolve().parents[1])
CACHE_NAME = hashlib.sha1(O200K_URL.encode()).hexdigest()
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection fails


def _unshare() -> list[str]:
    """``unshare -n`` (a network namespace with only a down loopback) where it works."""
    if shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return ["unshare", "-n"] if probe.returncode == 0 else []


def _offline_env(cache: Path) -> dict[str, str]:
    """No way out: every proxy variable at a closed port (and, with ``unshare``, no network
    at all), an empty tiktoken cache, this checkout's gamut-eval first on the path."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy",)}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[name] = DEAD_PROXY
    env["TIKTOKEN_CACHE_DIR"] = str(cache)
    env.pop("DATA_GYM_CACHE_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["INSPECT_DISPLAY"] = "plain"
    return env


def test_inspect_eval_smoke_run_works_offline(tmp_path: Path) -> None:
    cache, logs = tmp_path / "tiktoken", tmp_path / "logs"
    env = _offline_env(cache)
    prefix = _unshare()
    # The control: in this environment tiktoken alone cannot get the encoding.
    control = subprocess.run(
        [*prefix, sys.executable, "-c", "import tiktoken; tiktoken.get_encoding('o200k_base')"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert control.returncode != 0, "the test environment reaches the network"
    inspect = str(Path(sys.executable).with_name("inspect"))
    command = [inspect, "eval", "gamut_eval/gamut", "--model", "mockllm/model",
               "-T", "judge=gamut/offline", "--limit", "3", "--log-dir", str(logs)]  # fmt: skip
    result = subprocess.run(
        [*prefix, *command], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success", log.error
    assert log.eval.model == "mockllm/model"
    samples = log.samples or []
    assert len(samples) == 3
    for sample in samples:
        score = (sample.scores or {})["gamut_scorer"]
        assert math.isfinite(score.value["gamut"])  # type: ignore[index]
        assert score.metadata["judge"] == "gamut/offline"  # type: ignore[index]
        assert (score.explanation or "").startswith("**Gamut ")
        assert sample.model_usage["mockllm/model"].input_tokens > 0  # counted with o200k_base
    assert hashlib.sha256((cache / CACHE_NAME).read_bytes()).hexdigest() == O200K_SHA256


def test_the_bundled_encoding_seeds_tiktokens_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    path = ensure_o200k_base()
    assert path == tmp_path / "cache" / CACHE_NAME
    assert hashlib.sha256(path.read_bytes()).hexdigest() == O200K_SHA256
    first = path.stat().st_mtime_ns
    assert ensure_o200k_base() == path
    assert path.stat().st_mtime_ns == first  # a good file is left as it is
    path.write_bytes(b"damaged")  # a damaged cache file is replaced
    assert ensure_o200k_base() == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == O200K_SHA256
    assert [p.name for p in path.parent.iterdir()] == [CACHE_NAME]  # no partial left behind


def test_a_cache_turned_off_or_unwritable_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert ensure_o200k_base() is None
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(blocker / "cache"))  # under a file
    assert ensure_o200k_base() is None
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    assert ensure_o200k_base() == tmp_path / "gym" / CACHE_NAME
