"""The judge's series: one environment's benchmark and parameter combination over the recorded commits
(:class:`Series` of :class:`Point`), read from the recorded history's frame (:func:`series_of`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from detsim.track.base.status import Status
from detsim.track.judge.family import Family
from detsim.track.judge.history import KEY
from detsim.track.judge.thresholds import DEFAULT_THRESHOLD


@dataclass(frozen=True)
class Point:
    commit: str
    value: float | None  # None: failed; nan: skipped
    samples: tuple[float, ...] | None = None

    @property
    def measured(self) -> bool:
        return self.value is not None and math.isfinite(self.value)


@dataclass(frozen=True)
class Series:
    env: str
    name: str
    params: str  # "" or "(pixels=128, dtype='float64')"
    family: Family
    unit: str
    case: str | None = None  # golden case id of parity/determinism tracks
    threshold: float = DEFAULT_THRESHOLD
    points: tuple[Point, ...] = ()

    def __post_init__(self):  # a family given as its word (a test, a gate's finding) is read as its member
        object.__setattr__(self, "family", Family(self.family))

    @property
    def label(self) -> str:
        return self.name + self.params


def _point(commit: str, value: float, status: str, samples) -> Point:
    """A frame row as the judge's point: a failure's value None, a skip's NaN."""
    return Point(commit=commit, value=None if status == Status.FAILED.value else value,
                 samples=samples if isinstance(samples, tuple) else None)


def series_of(frame: pd.DataFrame) -> list[Series]:
    """The judge's series: one per environment, benchmark and parameter combination, in the order each first
    appears in the frame, its points in the frame's (commit) order."""
    out = []
    for _, rows in frame.groupby(KEY, sort=False):
        head = rows.iloc[0]
        points = tuple(map(_point, rows["commit"], rows["value"], rows["status"], rows["samples"]))
        out.append(Series(env=head["environment"], name=head["benchmark"], params=head["parameters"],
                          family=Family(head["family"]), unit=head["unit"],
                          case=None if pd.isna(head["case"]) else head["case"], threshold=float(head["threshold"]),
                          points=points))
    return out
