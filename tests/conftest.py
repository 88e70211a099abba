"""Suite-wide test configuration.

Inspect AI leaves event loops, sockets and anyio streams to the garbage collector, which
reports them as unraisable ResourceWarnings in whatever test happens to run when they are
collected. Tests that drive Inspect are marked ``uses_inspect``; their unraisable warnings
are tolerated, and ``make test`` runs them in a pytest process of their own, so the
leftovers never surface in an unrelated test (where warnings stay errors and would hide
or fake a real leak of ours).
"""

from __future__ import annotations

import gc
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

_INSPECT_TESTS = (
    "tests/generate/",
    "tests/construct/",
    "tests/judge/test_judge_inspect.py",
    "tests/real/test_real_run.py",
    "tests/real/test_real_build.py",
)


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marker added here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path).replace("\\", "/")
        if any(part in path for part in _INSPECT_TESTS):
            item.add_marker(pytest.mark.uses_inspect)
            item.add_marker(
                pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
            )


@pytest.fixture(autouse=True)
def _collect_inspect_leftovers(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if request.node.get_closest_marker("uses_inspect"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gc.collect()


# Debian's chromium for the browser tests (analysis, annotate), and the folder they save
# screenshots in.
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
    """Debian's chromium, driven by Playwright (its own browser download is never used)."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests drive Debian's chromium "
            "(install it with `make browser`, i.e. `apt-get install chromium`)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()
