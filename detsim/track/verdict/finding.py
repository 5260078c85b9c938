"""A finding of the verdict: one series' latest value against its history, with the evidence that decided it.

Timing and throughput steps (:data:`REMEASURED`) carry a confirmation label in ``detail["confirmation"]``:
:data:`SUSPECT` until re-measured, then :data:`CONFIRMED` or :data:`NOISE`, or :data:`UNDECIDED` where it
could not be re-measured here (with ``detail["decide_command"]``, the one command that decides it); only
confirmed ones are regressions (:attr:`Finding.is_verdict`).

Each finding has one **label** (:attr:`Finding.label`, also in its JSON record), the word its line starts
with: ``NONDETERMINISTIC`` when two runs of the same input gave different bits (the ``reproducibility``
family), ``CHANGED`` when an image's bits changed and reproduce (image hashes and fingerprints),
``SUSPECT``, ``NOISE`` or ``UNDECIDED`` for a timing step not confirmed, else ``REGRESSED``. They are different findings
with different fixes: a changed image is accepted or reverted, a non-reproducible one is never a baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from detsim.track.history.series import Series

REMEASURED = ("timing", "throughput")  # families whose steps are suspects until re-measured
SUSPECT = "suspect"  # detail["confirmation"] of a step not (yet) re-measured
NOISE = "noise"  # ... of a step the history itself or the re-measurement explains as noise
CONFIRMED = "confirmed"  # ... of a step the re-measurement confirmed
UNDECIDED = "undecided"  # ... of a suspect that could not be re-measured here (never a regression)

NONDETERMINISTIC, CHANGED, REGRESSED = "NONDETERMINISTIC", "CHANGED", "REGRESSED"
FAMILY_LABELS = {"reproducibility": NONDETERMINISTIC, "determinism": CHANGED, "fingerprint": CHANGED,
                 "hash count": CHANGED}
CONFIRMATION_LABELS = {SUSPECT: "SUSPECT", NOISE: "NOISE", UNDECIDED: "UNDECIDED"}  # a timing step's label until confirmed


@dataclass(frozen=True)
class Finding:
    series: Series
    last_good: str | None  # None: never good in the recorded history
    first_bad: str
    old: float | None
    new: float
    detail: Mapping = field(default_factory=dict)  # evidence, merged into the JSON record

    @property
    def is_verdict(self) -> bool:
        """Whether this finding is a regression (a suspect or a step re-measured as noise is not)."""
        return self.series.family not in REMEASURED or self.detail.get("confirmation") == CONFIRMED

    @property
    def label(self) -> str:
        """The word the finding's line starts with (see the module docstring)."""
        if self.series.family in REMEASURED and not self.is_verdict:
            return CONFIRMATION_LABELS.get(self.detail.get("confirmation"), "SUSPECT")
        return FAMILY_LABELS.get(self.series.family, REGRESSED)

    @property
    def ratio(self) -> float | None:
        if self.old in (None, 0):
            return None
        return self.new / self.old

    def record(self) -> dict:
        """The finding as the JSON report stores it."""
        s = self.series
        record = {"family": s.family, "benchmark": s.name, "params": s.params, "env": s.env, "unit": s.unit,
                  "last_good": self.last_good, "first_bad": self.first_bad, "old": self.old, "new": self.new,
                  "ratio": None if self.ratio is None else round(self.ratio, 4), "label": self.label, **self.detail}
        if s.case:
            record["case"] = s.case
        if s.family == "parity":
            record["new_r"] = round(1 - self.new, 12)
            record["old_r"] = None if self.old is None else round(1 - self.old, 12)
        return record
