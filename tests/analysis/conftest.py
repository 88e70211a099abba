"""Shared fixtures of the analysis tests: the folder the browser tests save screenshots in."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """``test-screenshots/<run>/`` at the repository root (git-ignored): ``<run>`` is
    $GAMUT_TEST_RUN, or the run's start time and process id, so runs never mix."""
    run = os.environ.get("GAMUT_TEST_RUN") or time.strftime(
        f"%Y%m%d-%H%M%S-{os.getpid()}", time.gmtime()
    )
    folder = ROOT / "test-screenshots" / run
    folder.mkdir(parents=True, exist_ok=True)
    return folder
