"""The exit codes of every ``detsim-track`` command and of the gates CI runs: one meaning per code."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # measured, and nothing regressed or differs
    REGRESSED = 1  # something regressed, differs, fails its gate or diverges
    UNMEASURED = 2  # something could not be measured, or the input was bad (2 wins over 1)
    INTERRUPTED = 130  # stopped by Ctrl-C (128 + SIGINT, as shells report it)
    TERMINATED = 143  # stopped by SIGTERM (128 + SIGTERM), after the same clean-up as Ctrl-C


# what a run's exit status says, in the words the help and the status page use
MEANING = {ExitCode.OK: "all good", ExitCode.REGRESSED: "something regressed",
           ExitCode.UNMEASURED: "something could not be measured"}


class BadInput(Exception):
    """Input a command cannot use (a file, a selection, conflicting options): one line naming it, exit 2
    (UNMEASURED), before anything is written."""


def worst(*codes: int) -> ExitCode:
    """The code of a run made of several verdicts: TERMINATED over INTERRUPTED over UNMEASURED over
    REGRESSED over OK."""
    order = (ExitCode.TERMINATED, ExitCode.INTERRUPTED, ExitCode.UNMEASURED, ExitCode.REGRESSED)
    for code in order:
        if code in codes:
            return code
    return ExitCode.OK
