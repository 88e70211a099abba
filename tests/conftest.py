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
import warnings
from collections.abc import Iterator

import pytest

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
