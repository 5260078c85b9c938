"""What one case rendered by a target's command came to: an image judged against its reference, or a
failure of its own kind. Never an exception: a broken commit is a finding, not a stopped run.

Input: the render's facts (:mod:`.render`). Output: a frozen :class:`CaseOutcome` and its JSON record.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Mapping

from detsim.track.base.metrics import passes_parity


class Ending(enum.Enum):
    """How a render ended: an image, or a failure of its own kind."""

    IMAGE = "image"  # an image of the expected size: judged by its parity
    CRASHED = "crashed"  # exited non-zero, or could not start
    TIMED_OUT = "timed out"  # killed past the spec's timeout_s
    NO_IMAGE = "no image"  # exited 0 without writing its float image
    WRONG_SIZE = "wrong size"  # wrote an image with another number of pixels than the reference's

    @property
    def is_failure(self) -> bool:
        return self is not Ending.IMAGE


@dataclass(frozen=True)
class CaseOutcome:
    """One case at one commit: its status, what it cost, its image hash and its parity with the reference."""

    case: str
    status: Ending
    detail: str = ""  # one line: why it failed, or nothing
    seconds: float | None = None  # whole-process wall seconds, the least of its runs
    cpu_s: float | None = None  # whole-process CPU seconds (user + system), the least of its runs
    peak_mb: float | None = None  # peak resident memory of the process, the largest of its runs
    sha256: str | None = None  # the image's hash (detsim.track.base.hashing.IMAGE_HASH) of the first run
    hashes: tuple[str, ...] = ()  # every run's image hash, in order
    parity: Mapping | None = field(default=None, compare=False)  # parity.compare.image_metrics, shape added
    stderr_tail: tuple[str, ...] = ()  # the last lines of a failed run's stderr
    baseline_s: float | None = None  # another commit's seconds, timed in turns with these runs (render_case)
    baseline_cpu_s: float | None = None  # ... and its CPU seconds

    @property
    def reproduced(self) -> bool | None:
        """Whether every run gave the first's hash (None: rendered once, or not an image)."""
        if self.status.is_failure or len(self.hashes) < 2:
            return None
        return len(set(self.hashes)) == 1

    @property
    def r(self) -> float | None:
        return None if self.parity is None else self.parity.get("r")

    @property
    def one_minus_r(self) -> float | None:
        r = self.r
        return None if r is None else 1.0 - r

    @property
    def at_parity(self) -> bool:
        return self.status is Ending.IMAGE and passes_parity(self.r)

    def summary(self) -> str:
        """One line: what the render came to."""
        if self.status.is_failure:
            return f"{self.status.value}: {self.detail}"
        one_minus_r = "undefined" if self.one_minus_r is None else f"{self.one_minus_r:.3g}"
        extra = {True: ", reproduced", False: ", NOT reproduced by a second process", None: ""}[self.reproduced]
        return (f"image, 1 - r = {one_minus_r}, max rel {_g(self.parity.get('max_rel'))}, "
                f"sum ratio {_g(self.parity.get('sum_ratio'))}, {self.seconds:.2f} s{extra}")

    def record(self) -> dict:
        """The outcome as JSON stores it."""
        rec = asdict(self)
        rec.update(status=self.status.value, hashes=list(self.hashes), stderr_tail=list(self.stderr_tail),
                   parity=None if self.parity is None else dict(self.parity), reproduced=self.reproduced,
                   at_parity=self.at_parity)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping) -> "CaseOutcome":
        return cls(case=rec["case"], status=Ending(rec["status"]), detail=rec.get("detail", ""),
                   seconds=rec.get("seconds"), peak_mb=rec.get("peak_mb"), sha256=rec.get("sha256"),
                   hashes=tuple(rec.get("hashes", ())), parity=rec.get("parity"),
                   stderr_tail=tuple(rec.get("stderr_tail", ())), cpu_s=rec.get("cpu_s"),
                   baseline_s=rec.get("baseline_s"), baseline_cpu_s=rec.get("baseline_cpu_s"))


def _g(x) -> str:
    return "undefined" if x is None else f"{x:.3g}"
