"""The public API of ``gamut_eval.quality``: ``__all__`` complete, resolvable and sorted, and
the commands registered."""

from __future__ import annotations

import types

import gamut_eval.quality as quality
from gamut_eval.cli import COMMANDS


def _isort_key(name: str) -> tuple[int, str]:
    # RUF022's order: SCREAMING_CASE, then CamelCase, then the rest.
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def test_all_lists_exactly_the_public_names_sorted() -> None:
    public = {
        name
        for name, value in vars(quality).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert set(quality.__all__) == public
    assert all(hasattr(quality, name) for name in quality.__all__)
    assert quality.__all__ == sorted(quality.__all__, key=_isort_key)


def test_the_three_commands_are_registered() -> None:
    assert {"agreement", "stability", "audit-judge"} <= set(COMMANDS)
