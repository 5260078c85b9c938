"""How something the suite ran ended: a recorded run, a cell of the determinism matrix, a step of the GPU
check, a target's render of one case. One enum for all of them; its value is what the JSON records store.

A timing step's confirmation (suspect, noise, confirmed, undecided) is not an ending but where a finding
stands: :class:`detsim.track.judge.finding.Confirmation`."""

from __future__ import annotations

import enum

from .exitcodes import ExitCode


class Status(str, enum.Enum):
    def __str__(self) -> str:  # as enum.StrEnum (Python 3.11+) does; the project supports 3.10
        return self.value

    OK = "ok"  # ran to its end and what it checks holds (a render: an image of the reference's size)
    FAILED = "failed"  # ran and found a problem: a failing test, r under the line, runs that differ
    CRASHED = "crashed"  # could not run to its end: raised, exited non-zero, gave an answer it could not read
    TIMED_OUT = "timed out"  # ran past its box and was killed
    SKIPPED = "skipped"  # does not apply here (the reason says why)
    NOT_RUN = "not run"  # never started: the budget was spent, or what it needed did not complete
    NOTHING_COLLECTED = "nothing collected"  # a pytest selection that matched no test
    NO_IMAGE = "no image"  # a render that exited 0 without writing its float image
    WRONG_SIZE = "wrong size"  # a render that wrote another number of pixels than the reference's

    @classmethod
    def _missing_(cls, value: object) -> Status | None:
        """Records written before the endings were one enum: a render's "image", a GPU step's "error"."""
        return {"image": cls.OK, "error": cls.CRASHED}.get(value)  # type: ignore[arg-type]

    @property
    def is_failure(self) -> bool:
        """Whether it ended without what it was run for (a skip is not a failure: its reason says why)."""
        return self not in (Status.OK, Status.SKIPPED)

    @property
    def exit_code(self) -> ExitCode:
        """The exit code this ending calls for (:func:`detsim.track.base.exitcodes.worst` of several)."""
        if self is Status.FAILED:
            return ExitCode.REGRESSED
        return ExitCode.OK if self in (Status.OK, Status.SKIPPED) else ExitCode.UNMEASURED
