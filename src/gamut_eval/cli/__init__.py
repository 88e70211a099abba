"""The ``gamut`` command line: thin commands over the library.

``main`` is the console entry point; ``cli`` is the click group (for ``CliRunner``), and
``COMMANDS`` names each command and the module that defines it.
"""

from gamut_eval.cli._main import COMMANDS, cli, main

__all__ = ["COMMANDS", "cli", "main"]
