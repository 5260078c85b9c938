"""The top layer: one module per ``detsim-track`` subcommand (see :mod:`detsim.track.cli`); it checks its
inputs and outputs up front, calls the areas below it, prints and returns the exit code."""

import sys

from detsim.track.base.exitcodes import ExitCode


def refuse(message: str) -> ExitCode:
    """Print why the command cannot go on (one line, on stderr); the exit code of bad input."""
    print(message, file=sys.stderr)
    return ExitCode.UNMEASURED
