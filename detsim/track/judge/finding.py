"""A finding of the verdict: one series' latest value against its history, with the evidence that decided it.

Its label (docs/tracking.md, "The verdict") is its family's, or, for a timing step (:data:`REMEASURED`), its
confirmation (a :class:`Confirmation`) in ``detail["confirmation"]``; only a confirmed step is a regression
(:attr:`Finding.is_verdict`). Views that read the serialised verdict tell a flagged finding by its label
(:func:`flags`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

from detsim.track.judge.family import Family
from detsim.track.judge.series import Series

REMEASURED = (Family.TIMING, Family.THROUGHPUT)  # families whose steps are suspects until re-measured
# judged against a stored baseline of the machine class (fingerprints are judged as determinism where none is stored)
HASH_FAMILIES = (Family.IMAGE_CHANGED, Family.CASES_CHANGED)


class Confirmation(str, enum.Enum):
    """Where a timing step stands (its value is what the JSON report stores)."""

    def __str__(self) -> str:  # as enum.StrEnum (Python 3.11+) does; the project supports 3.10
        return self.value

    SUSPECT = "suspect"  # not (yet) re-measured
    NOISE = "noise"  # the history itself or the re-measurement explains it as noise
    CONFIRMED = "confirmed"  # the re-measurement confirmed it: a regression
    UNDECIDED = "undecided"  # could not be re-measured here (never a regression)


NONDETERMINISTIC, CHANGED, REGRESSED = "NONDETERMINISTIC", "CHANGED", "REGRESSED"
FLAGGED = (REGRESSED, CHANGED, NONDETERMINISTIC)  # the labels of the findings that are regressions
FAMILY_LABELS = {Family.RUNS_DIFFER: NONDETERMINISTIC, Family.IMAGE_CHANGED: CHANGED, Family.IMAGE_FINGERPRINT: CHANGED,
                 Family.CASES_CHANGED: CHANGED}
CONFIRMATION_LABELS = {Confirmation.SUSPECT: "SUSPECT", Confirmation.NOISE: "NOISE",
                       Confirmation.UNDECIDED: "UNDECIDED"}  # a timing step's label until confirmed


def series_of_record(record: Mapping) -> Series:
    """The series a finding's or an event's JSON record names (its points are not stored)."""
    return Series(env=record["env"], name=record["benchmark"], params=record["params"], family=Family(record["family"]),
                  unit=record["unit"], case=record.get("case"))


def flags(record: Mapping) -> bool:
    """Whether a finding's JSON record (:meth:`Finding.to_dict`) is a regression (:attr:`Finding.is_verdict`)."""
    return record.get("label") in FLAGGED


# a record's keys made from the finding itself (the others are its evidence, ``detail``)
RECORD_KEYS = ("family", "benchmark", "params", "env", "unit", "last_good", "first_bad", "old", "new", "ratio", "label",
               "case", "new_r", "old_r")


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
        return self.series.family not in REMEASURED or self.detail.get("confirmation") == Confirmation.CONFIRMED

    @property
    def label(self) -> str:
        """The word the finding's line starts with."""
        if self.series.family in REMEASURED and not self.is_verdict:
            return CONFIRMATION_LABELS.get(self.detail.get("confirmation"), "SUSPECT")
        return FAMILY_LABELS.get(self.series.family, REGRESSED)

    @property
    def ratio(self) -> float | None:
        return None if self.old in (None, 0) else self.new / self.old

    @classmethod
    def from_record(cls, record: Mapping) -> Finding:
        """The finding :meth:`record` stored (its series without points; the rest of the record its evidence)."""
        detail = {k: v for k, v in record.items() if k not in RECORD_KEYS}
        if "confirmation" in detail:
            detail["confirmation"] = Confirmation(detail["confirmation"])
        return cls(series_of_record(record), record["last_good"], record["first_bad"], record["old"], record["new"],
                   detail)

    def to_dict(self) -> dict:
        """The finding as the JSON report stores it."""
        s = self.series
        record = {"family": s.family, "benchmark": s.name, "params": s.params, "env": s.env, "unit": s.unit,
                  "last_good": self.last_good, "first_bad": self.first_bad, "old": self.old, "new": self.new,
                  "ratio": None if self.ratio is None else round(self.ratio, 4), "label": self.label, **self.detail}
        if s.case:
            record["case"] = s.case
        if s.family == Family.PARITY:
            record["new_r"] = round(1 - self.new, 12)
            record["old_r"] = None if self.old is None else round(1 - self.old, 12)
        return record
