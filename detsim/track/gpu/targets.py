"""The device targets (docs/gpu.md, "Targets"), defined once, and the rule that judges a measured value against
one: met, missed (with its gap) or not measured (with why).

A target is a limit on one measured quantity. ``scope`` says whose value counts: ``BEST``, the best path's
(the one a user would choose: a target is met where some path meets it, and that path is named); ``EVERY``, the
worst path's, and every path must have been measured for a target to be met. The values are read from a
check's record by :mod:`detsim.track.gpu.verdicts`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from detsim.track.base.metrics import PARITY_MIN_R

MIN_THROUGHPUT_PIXEL_STEPS = 3e9  # the throughput targets hold on a workload at least this large


class Verdict(str, enum.Enum):
    MET = "met"
    MISSED = "missed"
    NOT_MEASURED = "not measured"


class Sense(str, enum.Enum):
    AT_LEAST = ">="
    AT_MOST = "<="


class Scope(str, enum.Enum):
    BEST = "best path"
    EVERY = "every path"


@dataclass(frozen=True)
class DeviceTarget:
    key: str  # stable name in gpu.json
    what: str  # one line: the quantity
    sense: Sense
    limit: float
    unit: str
    scope: Scope
    how: str  # one line: how the check measures it
    gap_on_complement: bool = False  # the gap is read on 1 - value (a correlation: 0.9990 is twice 0.9995's gap)

    def shown(self, value: float) -> str:
        """The value as the target reads: a correlation to 9 places, the rest to 4 figures."""
        return f"{value:.9f}" if self.gap_on_complement else f"{value:.4g}"

    def meets(self, value: float) -> bool:
        return value >= self.limit if self.sense is Sense.AT_LEAST else value <= self.limit

    def gap(self, value: float) -> float | None:
        """How many times the value is off its limit (>= 1 where missed); None where a ratio means nothing (a limit
        of 0)."""
        if self.gap_on_complement:
            value, limit = 1.0 - value, 1.0 - self.limit
            return value / limit if limit > 0 else None
        if self.sense is Sense.AT_LEAST:
            return self.limit / value if value > 0 else math.inf
        return value / self.limit if self.limit > 0 else None


_RATE = (f"the throughput workload (>= {MIN_THROUGHPUT_PIXEL_STEPS:.0e} pixel·steps): {{}}, the median of the timed "
         f"calls")
TARGETS = (
    DeviceTarget("rate-float32-kernel", "float32 throughput, kernel time", Sense.AT_LEAST, 3e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("CUDA events around render() of a prepared set-up, after warm-up")),
    DeviceTarget("rate-float32-end-to-end", "float32 throughput, end to end", Sense.AT_LEAST, 3e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("prepare + render + synchronize, wall clock, after warm-up")),
    DeviceTarget("rate-float64-kernel", "float64 throughput, kernel time", Sense.AT_LEAST, 1e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("CUDA events around render() of a prepared set-up, after warm-up")),
    DeviceTarget("rate-float64-end-to-end", "float64 throughput, end to end", Sense.AT_LEAST, 1e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("prepare + render + synchronize, wall clock, after warm-up")),
    DeviceTarget("p2-end-to-end-float32", "P2 (1024², 200 steps) end to end, warm, float32", Sense.AT_MOST, 2.0, "ms",
           Scope.BEST, "prepare + render + synchronize of the same configuration, wall clock, median"),
    DeviceTarget("fixed-cost-new", "fixed cost, a new configuration each call", Sense.AT_MOST, 1.0, "ms", Scope.BEST,
           "P1@8 (64 pixels): prepare + render + synchronize, wall clock, -distance 1 nm apart each call, median"),
    DeviceTarget("fixed-cost-cached", "fixed cost, the same configuration each call", Sense.AT_MOST, 0.2, "ms",
           Scope.BEST, "P1@8: prepare + render + synchronize of one configuration again, wall clock, median"),
    DeviceTarget("p4096-per-step", "P4096 (4096², 1 step) per pixel·step, against P2", Sense.AT_LEAST, 1.0,
           "x P2's rate", Scope.BEST, "end-to-end rate of P4096 over P2's on the same path"),
    DeviceTarget("launches", "device launches per render (P2)", Sense.AT_MOST, 10, "launches", Scope.BEST,
           "torch.profiler: kernels + copies/fills the device ran for render() of a prepared set-up"),
    DeviceTarget("bit-identical", "paths whose image differs run to run or across processes", Sense.AT_MOST, 0, "paths",
           Scope.EVERY, "P2's sha256: twice in the speed step's process, once in the parity step's"),
    DeviceTarget("parity", "lowest r over every golden case", Sense.AT_LEAST, PARITY_MIN_R, "r", Scope.EVERY,
           "the parity steps: each case against nanoBragg.c's image (a case a path leaves to the eager code is "
           "the eager path's)", gap_on_complement=True),
)
TARGETS_BY_KEY = {t.key: t for t in TARGETS}


@dataclass(frozen=True)
class TargetValue:
    """A target's measured value: ``value`` None where nothing was measured (``why``); ``where`` names the path
    (and workload) it came from; ``missing`` lists what an EVERY target still lacks (paths or cases)."""

    value: float | None
    where: str = ""
    why: str = ""
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetRow:
    """One line of the targets table."""

    target: DeviceTarget
    verdict: Verdict
    measured: TargetValue
    gap: float | None = None  # where missed
    note: str = ""

    def record(self) -> dict:
        t = self.target
        return {"key": t.key, "what": t.what, "limit": f"{t.sense.value} {t.limit:g} {t.unit}", "scope": t.scope.value,
                "how": t.how, "verdict": self.verdict.value, "value": self.measured.value, "where": self.measured.where,
                "gap": self.gap, "note": self.note}


def judge(target: DeviceTarget, measured: TargetValue, on_gpu: str | None) -> TargetRow:
    """The verdict of ``measured`` against ``target``. ``on_gpu``: None where the run was a dry run or saw no CUDA
    device (then nothing is met or missed: a CPU figure is shown as what it is), else the card's name."""
    if on_gpu is None:
        note = "no CUDA device: dry run" + (f" (CPU, small size: {target.shown(measured.value)} {target.unit})"
                                            if measured.value is not None else "")
        return TargetRow(target, Verdict.NOT_MEASURED, measured, note=note)
    if measured.value is None:
        return TargetRow(target, Verdict.NOT_MEASURED, measured, note=measured.why)
    if not target.meets(measured.value):
        gap = target.gap(measured.value)
        note = f"{gap:.3g}x off" if gap is not None else ""
        if measured.missing:
            note += f"{'; ' if note else ''}also not measured: {', '.join(measured.missing)}"
        return TargetRow(target, Verdict.MISSED, measured, gap, note)
    if target.scope is Scope.EVERY and measured.missing:
        return TargetRow(target, Verdict.NOT_MEASURED, measured,
                   note=f"met where measured; not measured: {', '.join(measured.missing)}")
    return TargetRow(target, Verdict.MET, measured, note=measured.why)

