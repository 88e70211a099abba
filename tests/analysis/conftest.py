"""Shared fixtures of the analysis tests: Debian's chromium for the browser tests, and the
folder they save screenshots in."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests drive Debian's chromium "
            "(install it with `make browser`, i.e. `apt-get install chromium`)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()
