"""Optional extras: which ``pip install 'gamut-eval[EXTRA]'`` brings a missing library.

The core install grades (validate, compile, judge, score, report); Inspect AI is the
``inspect`` extra. A command that needs an extra checks for it first, before it writes
anything (:func:`require_extras`; :func:`model_extras` for an Inspect model and its
provider's SDK), and otherwise ends with exit code 2 and one install command naming every
missing extra, never a traceback; the command line also
turns any ``ModuleNotFoundError`` of a library listed here into the same message
(:func:`missing_extra_message`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from gamut_eval.errors import InputError

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
    "inspect": ("inspect_ai", "mmh3", "openai"),
    "ray": ("ray",),
    "anthropic": ("anthropic",),
    "google": ("google.genai",),
}
"""Extra -> the top-level modules it installs that the project imports."""

_DRIVERS = {"psycopg": "annotate", "multipart": "annotate"}
"""Modules imported by a library of an extra rather than by the project (SQLAlchemy's
PostgreSQL driver; python-multipart's old name)."""


PROVIDER_EXTRAS = {"anthropic": "anthropic", "google": "google"}
"""Inspect providers whose SDK an extra of its own installs (OpenAI's comes with
``inspect``: Inspect's ``openai`` provider and the OpenAI-compatible ones use it)."""


def install_command(extra: str) -> str:
    """The command that installs ``extra`` (several: ``inspect,anthropic``), published and
    from a clone of the repository."""
    return f"pip install 'gamut-eval[{extra}]' (from a clone: pip install -e '.[{extra}]')"


class MissingExtra(InputError):
    """A feature needs an optional extra that is not installed."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import, or a None entry
        return False


def extra_installed(extra: str) -> bool:
    """Whether every module of ``extra`` can be imported (found, not imported)."""
    return all(_installed(m) for m in EXTRA_MODULES[extra])


def model_extras(model: str) -> tuple[str, ...]:
    """The extras an Inspect model (``anthropic/claude-sonnet-4-5``) needs: ``inspect``,
    and its provider's SDK where an extra brings it."""
    provider = PROVIDER_EXTRAS.get(model.partition("/")[0])
    return ("inspect", provider) if provider else ("inspect",)


def require_extras(extras: Iterable[str], feature: str) -> None:
    """Raise :class:`MissingExtra` naming one install command for every extra of
    ``extras`` with a module not installed; ``feature`` names what needs them (``gamut
    annotate``). Called before a command writes anything."""
    wanted = list(dict.fromkeys(extras))
    missing = {e: [m for m in EXTRA_MODULES[e] if not _installed(m)] for e in wanted}
    lacking = [e for e in wanted if missing[e]]
    if not lacking:
        return
    modules = [m for e in lacking for m in missing[e]]
    names = " and ".join(f"'{e}'" for e in lacking)
    raise MissingExtra(
        f"{feature} needs the optional {names} extra{'s' if len(lacking) > 1 else ''} "
        f"({', '.join(modules)} {'is' if len(modules) == 1 else 'are'} not installed): "
        + install_command(",".join(lacking))
    )


def require_extra(extra: str, feature: str) -> None:
    """:func:`require_extras` for one extra."""
    require_extras((extra,), feature)


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """The install command for the extra providing the missing module, if one does."""
    top = (exc.name or "").split(".")[0]
    extra = _DRIVERS.get(top) or next(
        (e for e, ms in EXTRA_MODULES.items() if top in {m.split(".")[0] for m in ms}), None
    )
    if extra is None:
        return None
    return f"{top} is not installed; it comes with the optional '{extra}' extra: " + (
        install_command(extra)
    )
