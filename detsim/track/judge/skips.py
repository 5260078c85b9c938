"""Why series were skipped at the latest commit: each one's reason (:func:`skip_reason`), and the skipped series
grouped by reason (:func:`group_skips`) as the verdict lists them: ``54 image hashes (no baseline for this machine
class)``. Input: the skipped :class:`~.series.Series`; output: :class:`Skipped` groups, the largest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Iterable, Mapping

from detsim.track.base.device_costs import DEVICE_COST_UNITS
from detsim.track.judge.finding import HASH_FAMILIES
from detsim.track.judge.family import Family
from detsim.track.judge.series import Series
from detsim.track.judge.benchmarks import param_values


@dataclass(frozen=True)
class Reason:
    one: str  # what was skipped, one of them ("image hash")
    many: str  # ... several ("image hashes")
    why: str  # why, in a few words


NO_BASELINE = Reason("image hash", "image hashes", "no baseline for this machine class")
NO_CUDA = Reason("CUDA benchmark", "CUDA benchmarks", "no GPU here")
TRITON_ON_CPU = Reason("triton benchmark", "triton benchmarks", "GPU only")
NO_DEVICE_COST = Reason("device cost", "device costs",
                        "not countable at this commit here: the benchmark's own line says why")
NO_VALGRIND = Reason("instruction count", "instruction counts", "no valgrind or pytest-codspeed's hooks")
CASE_FAILED = Reason("track of a failed case", "tracks of failed cases", "their case failed: see NOT MEASURED")
UNKNOWN = Reason("other", "others", "the benchmark's own reason, which asv does not keep")
REASONS = (NO_BASELINE, NO_CUDA, TRITON_ON_CPU, NO_DEVICE_COST, NO_VALGRIND, CASE_FAILED, UNKNOWN)


def skip_reason(series: Series, class_baseline: bool, failed_cases: Collection[str] = ()) -> Reason:
    """Why ``series`` was skipped; ``class_baseline``: whether a baseline of this machine's class is stored;
    ``failed_cases``: the cases with a series that failed at the same commit (the rest of a case's tracks are
    skipped when its render fails)."""
    params = param_values(series.params)
    if series.unit in DEVICE_COST_UNITS:
        return NO_DEVICE_COST
    if params.get("device") == "cuda":
        return NO_CUDA
    if params.get("mode") == "triton":
        return TRITON_ON_CPU
    if series.case and series.case in failed_cases:
        return CASE_FAILED
    if series.family in HASH_FAMILIES and not class_baseline:
        return NO_BASELINE
    if series.family == Family.COUNTED_COST:
        return NO_VALGRIND
    return UNKNOWN


@dataclass(frozen=True)
class Skipped:
    """The series skipped at the latest commit for one reason."""

    reason: Reason
    labels: tuple[str, ...]  # benchmark and parameters of each

    def text(self) -> str:
        """``54 image hashes (no baseline for this machine class)``."""
        count = len(self.labels)
        return f"{count} {self.reason.one if count == 1 else self.reason.many} ({self.reason.why})"

    def to_dict(self) -> dict:
        return {"what": self.reason.many, "why": self.reason.why, "benchmarks": list(self.labels)}

    @classmethod
    def from_record(cls, record: Mapping) -> Skipped:
        """The group :meth:`record` stored (a reason no longer known keeps its words)."""
        words = (record["what"], record["why"])
        reason = next((r for r in REASONS if (r.many, r.why) == words), Reason(record["what"], *words))
        return cls(reason, tuple(record["benchmarks"]))


def group_skips(skipped: Iterable[Series], class_baseline: bool,
                failed_cases: Collection[str] = ()) -> tuple[Skipped, ...]:
    """The skipped series by reason (:func:`skip_reason`), the largest group first (the unknown reason last)."""
    groups: dict[Reason, list[str]] = {}
    for series in skipped:
        groups.setdefault(skip_reason(series, class_baseline, failed_cases), []).append(series.label)
    ordered = sorted(groups.items(), key=lambda item: (item[0] == UNKNOWN, -len(item[1]), item[0].many))
    return tuple(Skipped(reason, tuple(labels)) for reason, labels in ordered)
