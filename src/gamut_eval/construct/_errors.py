"""Build errors: a unit that fails (recorded, others go on) vs a run that cannot go on."""

from __future__ import annotations

from gamut_eval.errors import GamutError

__all__ = ["BuildError", "Invalid", "UnitError"]


class BuildError(GamutError):
    """The build cannot go on at all (rejected credentials, an unusable model or provider)."""


class UnitError(GamutError):
    """One unit of work (an image, a question) failed; the stage records it and goes on."""

    def __init__(self, kind: str, message: str, details: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.message = message
        self.details = tuple(details)
        super().__init__(message)


class Invalid(Exception):
    """A model reply that the caller's rules reject; ``errors`` are fed back to the model."""

    def __init__(self, errors: list[str], kind: str = "invalid") -> None:
        self.errors = errors
        self.kind = kind
        super().__init__("; ".join(errors))
