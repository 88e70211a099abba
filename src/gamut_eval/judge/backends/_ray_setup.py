"""Ray, imported on demand: the ``ray`` backend's engines share these.

Ray is imported with ``importlib`` inside functions: importing the backends needs no Ray,
and the type checker does not walk Ray's sources.
"""

from __future__ import annotations

import importlib
from typing import Any

from gamut_eval.errors import InputError
from gamut_eval.judge._settings import RaySettings

__all__ = ["RAY_EXTRA", "connect", "import_ray"]

RAY_EXTRA = "pip install 'gamut-eval[ray]'"


def import_ray() -> Any:
    """``ray`` with Ray Data, or an ``InputError`` saying which extra to install."""
    try:
        ray = importlib.import_module("ray")
        importlib.import_module("ray.data")
    except ModuleNotFoundError as exc:
        raise InputError(
            f"the ray judge backend needs Ray Data ({exc.name} is missing): {RAY_EXTRA}"
        ) from None
    return ray


def connect(ray: Any, settings: RaySettings) -> bool:
    """Join the configured cluster (or start a local instance); True if started here."""
    if ray.is_initialized():
        return False
    ray.init(address=settings.address, log_to_driver=False)
    return True
