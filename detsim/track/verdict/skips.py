"""Why a series was skipped at the latest commit, read from what the series is (docs/tracking.md, "The
verdict": asv stores a skip as NaN and keeps no word of why)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from detsim.track.history.series import Series, param_values

IMAGE_HASHES = ("determinism", "hash count")  # families judged against a stored baseline of the machine class


@dataclass(frozen=True)
class Reason:
    one: str  # what was skipped, one of them ("image hash")
    many: str  # ... several ("image hashes")
    why: str  # why, in a few words


NO_BASELINE = Reason("image hash", "image hashes", "no baseline for this machine class")
NO_CUDA = Reason("CUDA benchmark", "CUDA benchmarks", "no GPU here")
TRITON_ON_CPU = Reason("triton benchmark", "triton benchmarks", "GPU only")
NO_VALGRIND = Reason("instruction count", "instruction counts", "no valgrind or pytest-codspeed's hooks")
UNKNOWN = Reason("other", "others", "the benchmark's own reason, which asv does not keep")


def skip_reason(series: Series, class_baseline: bool) -> Reason:
    """Why ``series`` was skipped; ``class_baseline``: whether a baseline of this machine's class is stored."""
    params = param_values(series.params)
    if params.get("device") == "cuda":
        return NO_CUDA
    if params.get("mode") == "triton":
        return TRITON_ON_CPU
    if series.family in IMAGE_HASHES and not class_baseline:
        return NO_BASELINE
    if series.family == "cost":
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

    def record(self) -> dict:
        return {"what": self.reason.many, "why": self.reason.why, "benchmarks": list(self.labels)}


def group_skips(skipped: Iterable[Series], class_baseline: bool) -> tuple[Skipped, ...]:
    """The skipped series by reason, the largest group first (the unknown reason last)."""
    groups: dict[Reason, list[str]] = {}
    for series in skipped:
        groups.setdefault(skip_reason(series, class_baseline), []).append(series.label)
    ordered = sorted(groups.items(), key=lambda item: (item[0] == UNKNOWN, -len(item[1]), item[0].many))
    return tuple(Skipped(reason, tuple(labels)) for reason, labels in ordered)
