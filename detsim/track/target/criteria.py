"""What makes a commit bad, against the last good one: the criteria of a bisection.

Input: the outcome of the criterion's case at the good commit and at a probed one (:mod:`.outcome`).
Output: a :class:`Marking`: a :class:`Mark`, good, bad, or skip (the probe cannot be judged by this
criterion: a parity criterion on a commit that renders no image), with one line saying why.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from detsim.track.base.metrics import ONE_MINUS_R_FLOOR, PARITY_MAX_ONE_MINUS_R
from detsim.track.target.render import CaseOutcome
from detsim.track.judge.thresholds import TARGET_PARITY

PARITY_FACTOR = TARGET_PARITY.value  # 1 - r growing by this factor is a change
TIMING_RUNS = 3  # a timing criterion takes the least of this many whole-process runs per commit


class Kind(enum.Enum):
    PARITY = "parity"  # 1 - r grows by more than the factor, or crosses the acceptance line
    CHANGED = "changed"  # the image's hash differs from the good commit's
    IRREPRODUCIBLE = "irreproducible"  # a second process does not reproduce the image's hash
    SLOWER = "slower"  # whole-process CPU seconds grow by more than the percentage (timed in turns with GOOD's)
    BROKEN = "broken"  # the render fails: crashed, timed out, no image, wrong size


class Mark(enum.Enum):
    """How a probed commit is marked, as git bisect's terms."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


@dataclass(frozen=True)
class Marking:
    mark: Mark
    why: str


@dataclass(frozen=True)
class Criterion:
    kind: Kind
    case: str  # a golden case id
    factor: float = PARITY_FACTOR  # parity
    percent: float | None = None  # slower

    @property
    def runs(self) -> int:
        """Processes per render: two to see a second process reproduce it, several for a timing."""
        return {Kind.IRREPRODUCIBLE: 2, Kind.SLOWER: TIMING_RUNS}.get(self.kind, 1)

    def describe(self) -> str:
        if self.kind is Kind.PARITY:
            return f"1 - r of {self.case} grows more than {self.factor:g}-fold or crosses the acceptance line"
        if self.kind is Kind.SLOWER:
            return f"{self.case} takes more than {self.percent:g} % more CPU time (the least of {self.runs} runs)"
        return {Kind.CHANGED: f"the image hash of {self.case} changes",
                Kind.IRREPRODUCIBLE: f"a second process does not reproduce {self.case}'s image",
                Kind.BROKEN: f"{self.case} fails to render"}[self.kind]

    def unusable_good(self, good: CaseOutcome) -> str | None:
        """Why the good commit's outcome cannot anchor this criterion (None: it can)."""
        if self.kind is Kind.BROKEN:
            return None if not good.status.is_failure else f"it does not render either ({good.summary()})"
        if good.status.is_failure:
            return f"it renders no image to compare with ({good.summary()})"
        if self.kind is Kind.PARITY and good.one_minus_r is None:
            return "its 1 - r is undefined (a constant or non-finite image)"
        if self.kind is Kind.IRREPRODUCIBLE and good.reproduced is False:
            return "its image is not reproduced either"
        return None

    def judge(self, good: CaseOutcome, probe: CaseOutcome) -> Marking:
        """Whether ``probe`` is bad against ``good`` (see the module docstring)."""
        if self.kind is Kind.BROKEN:
            return Marking(Mark.BAD if probe.status.is_failure else Mark.GOOD, probe.summary())
        if probe.status.is_failure:
            return Marking(Mark.SKIP, f"cannot be judged: {probe.summary()}")
        if self.kind is Kind.CHANGED:
            same = probe.sha256 == good.sha256
            return Marking(Mark.GOOD if same else Mark.BAD,
                             f"image {probe.sha256[:12]} {'=' if same else '!='} {good.sha256[:12]}")
        if self.kind is Kind.IRREPRODUCIBLE:
            return Marking(Mark.BAD if probe.reproduced is False else Mark.GOOD,
                             f"hashes {', '.join(h[:12] for h in probe.hashes)}")
        if self.kind is Kind.SLOWER:
            return self._slower(good, probe)
        return self._parity(good, probe)

    def _slower(self, good: CaseOutcome, probe: CaseOutcome) -> Marking:
        """CPU seconds decide (on a shared machine a process's wall time mostly measures the others'); the
        good commit's are those timed in turns with the probe when there are some."""
        in_turns = probe.baseline_cpu_s is not None
        base = probe.baseline_cpu_s if in_turns else good.cpu_s
        new = probe.cpu_s
        wall_base = probe.baseline_s if in_turns else good.seconds
        wall = f"; wall {probe.seconds:.2f} s against {wall_base:.2f} s" if wall_base else ""
        if base is None or new is None or base <= 0:
            return Marking(Mark.SKIP, "no CPU seconds to compare" + wall)
        bad = new > base * (1 + self.percent / 100)
        return Marking(Mark.BAD if bad else Mark.GOOD,
                         f"{new:.3f} CPU s against {base:.3f} ({100 * (new / base - 1):+.1f} %"
                         f"{', timed in turns' if in_turns else ''}){wall}")

    def _parity(self, good: CaseOutcome, probe: CaseOutcome) -> Marking:
        new, old = probe.one_minus_r, good.one_minus_r
        if new is None:
            return Marking(Mark.BAD, "1 - r is undefined (a constant or non-finite image)")
        shown = f"1 - r = {new:.3g} (good: {old:.3g})"
        crossed = old <= PARITY_MAX_ONE_MINUS_R < new
        grew = new > self.factor * max(old, ONE_MINUS_R_FLOOR)
        why = " crosses the acceptance line" if crossed else f" grew more than {self.factor:g}-fold" if grew else ""
        return Marking(Mark.BAD if crossed or grew else Mark.GOOD, shown + why)
