"""What the device check runs: the paths, the workloads, the golden cases and the time box of every step.

A **path** is one execution mode in one dtype (``compiled-float32``). The full plan runs on CUDA at the reference
sizes (P2: 1024², 200 steps a pixel; P4096: 4096², one step) and on a throughput workload of at least the
goals' 3e9 pixel·steps (P3G: 2048², 800 steps a pixel); the dry plan runs the same steps on the CPU at
sizes that take seconds (the Triton path under Triton's interpreter). Every step has a time box; the whole
check has a budget, and a step never gets more than what is left of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from detsim.track.base.workloads import WORKLOADS, Workload, reduced

# the device check's own workload, beside the reference ones: P2's physics on a 2048² detector with 20 phi
# steps, 2048² x 800 = 3.36e9 pixel·steps (at the eager float32 path's 5e9/s of the first H100 run, 0.7 s a
# render; the goals' rate on it is 1e-2 s)
CHECK_WORKLOADS = {"P3G": Workload("P3G", 2048, oversample=2, mosaic_domains=10, phi_steps=20)}


@dataclass(frozen=True)
class GpuPath:
    """One execution mode (``detsim.rendering.engine.MODES``) in one dtype."""

    mode: str
    dtype: str  # "float64" or "float32"

    @property
    def name(self) -> str:
        return f"{self.mode}-{self.dtype}"


PATHS = tuple(GpuPath(mode, dtype) for mode in ("eager", "compiled", "triton") for dtype in ("float64", "float32"))
REFERENCE_PATH = GpuPath("eager", "float64")  # the path whose CUDA images are compared bit for bit with the CPU's

# seconds: the whole check must end within 8 minutes on one H100; what the budget leaves is the command's own
# start-up and writing
FULL_BUDGET_S = 450.0
DRY_BUDGET_S = 600.0  # CI machines are slower and shared: the dry run proves the steps, its time matters less


@dataclass(frozen=True)
class Boxes:
    """The time box of each kind of step, seconds (a step gets the smaller of its box and the budget left)."""

    probe: float
    atomics: float
    speed: dict  # mode -> one path's timings (its compiles included)
    parity: dict  # mode -> one path's golden cases (its compiles included)
    cpu_reference: float
    divergence: float  # one path that differs, through the first-divergence finder
    tests: float
    benchmarks: float


@dataclass(frozen=True)
class CheckPlan:
    """Everything one run of the check does, decided before it starts."""

    dry_run: bool
    device: str  # "cuda" or "cpu"
    speed_workloads: tuple[str, ...]  # the first is also the determinism workload
    throughput_workload: str  # one of them, the largest: the throughput goals' workload
    overhead_workload: str  # a render so small that its time is the fixed cost of a call
    warm_calls: int  # timed calls per workload after its first (end to end, and again kernel only)
    repeat_s: float  # seconds a workload's timed calls may take after its first: a slow path times fewer (>= 1)
    fixed_cost_calls: int  # timed calls of the overhead workload, a new configuration each, then the same one
    golden_cases: tuple[str, ...] | None  # None: every case of the manifest
    budget_s: float
    boxes: Boxes
    paths: tuple[GpuPath, ...] = PATHS

    def __post_init__(self) -> None:
        if self.throughput_workload not in self.speed_workloads:
            raise ValueError(f"the throughput workload {self.throughput_workload} is not among the speed workloads")

    @property
    def determinism_workload(self) -> str:
        return self.speed_workloads[0]


# on one H100 the whole check took 344 s before P3G and the fixed-cost calls were added (~50 s more expected:
# the slowest path, Triton float64 at 6e8/s then, renders P3G three times, ~5 s each); a box is what one step may
# take at worst, and the budget, not the sum of the boxes, bounds the whole (the steps run most telling first:
# what comes last is what a slow machine loses)
FULL_BOXES = Boxes(probe=45, atomics=45, speed={"eager": 45, "compiled": 100, "triton": 75},
                   parity={"eager": 40, "compiled": 60, "triton": 40}, cpu_reference=45, divergence=90, tests=150,
                   benchmarks=45)
DRY_BOXES = Boxes(probe=30, atomics=60, speed={"eager": 60, "compiled": 90, "triton": 90},
                  parity={"eager": 60, "compiled": 60, "triton": 60}, cpu_reference=60, divergence=60, tests=60,
                  benchmarks=60)


def make_plan(dry_run: bool, golden_cases: tuple[str, ...] | None = None) -> CheckPlan:
    """The check on a CUDA device at the reference sizes (P2 at 1024², P4096, P3G), or dry: the same steps on the
    CPU, small (P2 and P4096 at 32², P3G at 8²: the same per-pixel work)."""
    if dry_run:
        return CheckPlan(True, "cpu", ("P2@32", "P4096@32", "P3G@8"), "P3G@8", "P1@8", 1, 2.0, 3, golden_cases,
                         DRY_BUDGET_S, DRY_BOXES)
    return CheckPlan(False, "cuda", ("P2", "P4096", "P3G"), "P3G", "P1@8", 5, 4.0, 20, golden_cases, FULL_BUDGET_S,
                     FULL_BOXES)


def workload(name: str) -> Workload:
    """A workload by name (``P2``, or the check's own ``P3G``) or reduced name (``P2@32``); ValueError for any
    other."""
    base, _, pixels = name.partition("@")
    if base in CHECK_WORKLOADS and (not pixels or pixels.isdigit()):
        return CHECK_WORKLOADS[base].resized(int(pixels)) if pixels else CHECK_WORKLOADS[base]
    found = WORKLOADS.get(name) or reduced(name)
    if found is None:
        raise ValueError(f"{name!r} is not a workload (one of {', '.join([*WORKLOADS, *CHECK_WORKLOADS])}, or "
                         f"NAME@PIXELS)")
    return found


def path_named(name: str) -> GpuPath:
    """The path of a name ``mode-dtype``; ValueError for any other."""
    for path in PATHS:
        if path.name == name:
            return path
    raise ValueError(f"{name!r} is not a path (one of {', '.join(p.name for p in PATHS)})")
