"""The public API: every package's ``__all__`` lists exactly its public names, and each
resolves (ruff's RUF022 keeps the lists sorted)."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = [
    "gamut_eval",
    "gamut_eval.rubric",
    "gamut_eval.scoring",
    "gamut_eval.judge",
    "gamut_eval.generate",
    "gamut_eval.analysis",
    "gamut_eval.calibration",
    "gamut_eval.testing",
    "gamut_eval.quality",
    "gamut_eval.construct",
    "gamut_eval.annotate",
]

CORE_API = {
    "MetaRubric", "Check", "Checklist", "Tier", "Verdict", "CompileConfig", "ScoringParams",
    "ScoreCard", "load_meta_rubric", "compile_rubric", "score_response",
}  # fmt: skip


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    for member in exported:
        assert hasattr(package, member), f"{name}.__all__ names {member!r}, which does not exist"
    public = {
        attr
        for attr, value in vars(package).items()
        if not attr.startswith("_")
        and not isinstance(value, types.ModuleType)
        and attr != "annotations"
    }
    assert public - set(exported) == set(), f"{name}: public but not in __all__"


def test_the_core_api_is_exported_from_the_top_level() -> None:
    import gamut_eval

    assert set(gamut_eval.__all__) >= CORE_API


def test_importing_the_package_does_not_import_inspect() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gamut_eval, gamut_eval.judge, gamut_eval.generate; "
        "sys.exit('inspect_ai' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
