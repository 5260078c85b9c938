"""The top layer: one module per ``detsim-track`` subcommand (:mod:`detsim.track.cli` dispatches).

Each exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``: it reads the
arguments, checks its inputs and outputs up front, calls the areas below it, prints, and returns the
exit code. No area imports a command.
"""

import sys

from detsim.track.base.exitcodes import ExitCode


def refuse(message: str) -> ExitCode:
    """Print why the command cannot go on (one line, on stderr); the exit code of bad input."""
    print(message, file=sys.stderr)
    return ExitCode.UNMEASURED
