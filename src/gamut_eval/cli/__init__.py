"""The ``gamut`` command line: thin commands over the library."""

from gamut_eval.cli._main import main

__all__ = ["main"]
