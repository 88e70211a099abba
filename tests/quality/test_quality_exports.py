"""The quality commands are registered (the package's public names are checked with every
other package's in tests/test_exported_members.py)."""

from __future__ import annotations

from gamut_eval.cli import COMMANDS


def test_the_three_commands_are_registered() -> None:
    assert {"agreement", "stability", "audit-judge"} <= set(COMMANDS)
