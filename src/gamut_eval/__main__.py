"""``python -m gamut_eval`` is the ``gamut`` command."""

from gamut_eval.cli import main

main()
