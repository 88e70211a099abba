"""Exit codes of the command line."""

EXIT_INPUT = 2
"""Bad input (a file that breaks a rule, an unknown id...): nothing was written."""
EXIT_FAILURE = 1
"""The work ran but failed (for example a judge backend that could not be used)."""
