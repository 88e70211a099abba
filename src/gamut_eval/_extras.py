"""Optional extras: which ``pip install 'gamut-eval[EXTRA]'`` brings a missing library.

A command that needs an extra checks for it first (:func:`require_extra`) and otherwise
ends with exit code 2 and the install command, never a traceback; the command line also
turns any ``ModuleNotFoundError`` of a library listed here into the same message
(:func:`missing_extra_message`).
"""

from __future__ import annotations

import importlib.util

from gamut_eval.errors import InputError

__all__ = ["EXTRA_MODULES", "MissingExtra", "install_command", "missing_extra_message",
           "require_extra"]  # fmt: skip

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "annotate": (
        "fastapi",
        "starlette",
        "uvicorn",
        "sqlalchemy",
        "alembic",
        "jinja2",
        "python_multipart",
    ),
    "embeddings": ("sentence_transformers",),
    "hub": ("huggingface_hub",),
    "ray": ("ray",),
}
"""Extra -> the top-level modules it installs that the project imports."""

_DRIVERS = {"psycopg": "annotate", "multipart": "annotate"}
"""Modules imported by a library of an extra rather than by the project (SQLAlchemy's
PostgreSQL driver; python-multipart's old name)."""


def install_command(extra: str) -> str:
    return f"pip install 'gamut-eval[{extra}]'"


class MissingExtra(InputError):
    """A feature needs an optional extra that is not installed."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import, or a None entry
        return False


def require_extra(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtra` naming the install command when a module of ``extra``
    is not installed; ``feature`` names what needs it (``gamut annotate``)."""
    missing = [m for m in EXTRA_MODULES[extra] if not _installed(m)]
    if missing:
        raise MissingExtra(
            f"{feature} needs the optional '{extra}' extra ({', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed): {install_command(extra)}"
        )


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """The install command for the extra providing the missing module, if one does."""
    top = (exc.name or "").split(".")[0]
    extra = _DRIVERS.get(top) or next((e for e, ms in EXTRA_MODULES.items() if top in ms), None)
    if extra is None:
        return None
    return f"{top} is not installed; it comes with the optional '{extra}' extra: " + (
        install_command(extra)
    )
