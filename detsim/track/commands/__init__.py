"""The top layer: one module per ``detsim-track`` subcommand (see :mod:`detsim.track.cli`); it checks its
inputs and outputs up front, calls the areas below it, prints and returns the exit code."""

import argparse
import sys

from detsim.track.base.exitcodes import ExitCode


def refuse(message: str) -> ExitCode:
    """Print why the command cannot go on (one line, on stderr); the exit code of bad input."""
    print(message, file=sys.stderr)
    return ExitCode.UNMEASURED


def _at_least(low: int):
    """An argparse type: a whole number, ``low`` or more (the reason it is not, as argparse's error)."""
    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, got {text}")
        return value

    return whole_number


positive_int, count = _at_least(1), _at_least(0)


def nonempty(text: str) -> str:
    """An argparse type: any text but the empty string (``--case ''`` names nothing to run)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text
