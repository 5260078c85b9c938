"""The top layer: one module per ``detsim-track`` subcommand (see :mod:`detsim.track.cli`); it checks its
inputs and outputs up front, calls the areas below it, prints and returns the exit code."""

import argparse
import sys

from detsim.track.base.exitcodes import ExitCode


def refuse(message: str) -> ExitCode:
    """Print why the command cannot go on (one line, on stderr); the exit code of bad input."""
    print(message, file=sys.stderr)
    return ExitCode.UNMEASURED


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number, 1 or more."""
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {text}")
    return value


def count(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    value = _whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value
