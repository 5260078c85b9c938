"""The one thresholds table: each family's threshold for both judges, with the reason for its value.

Three judges read it: the asv verdict (a step in a recorded history; asv.conf.json's ``regressions_thresholds``
holds its rows that have an ``asv_regex``, and a test holds that file to this table) and the bench gate
(``detsim-track bench-gate``: one run against a stored baseline file), and a target's probes
(``detsim-track bisect`` and ``record``: another repository's commits). A value is the largest allowed rise, a
fraction (0.02: +2 %), except parity's acceptance line, a Pearson r that a render must reach, and a target's
parity factor, the most 1 - r may grow. Below the table: the levels of the rank tests that decide a step.
Another repository's measurements may add rows (a line each) and families to the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.judge.family import Family


JUDGES = ("asv", "bench", "both", "target")  # who reads a row: see the module's docstring


@dataclass(frozen=True)
class Threshold:
    family: Family
    judge: str  # one of JUDGES: "asv" (a recorded history), "bench" (a baseline file), "both", "target"
    value: float
    reason: str
    asv_regex: str | None = None  # its key in asv.conf.json's regressions_thresholds


COST = Threshold(Family.COUNTED_COST, "both", 0.02, "a count repeats within 0.17 % run to run "
                 "(docs/bench-gate.md): +2 % is over 10x that, and a planted 3 % is caught", r"bench_cost\.")
LAUNCHES = Threshold(Family.COUNTED_COST, "asv", 0.10, "launches, copies and syncs of one render are counted "
                     "exactly on the CPU (two processes count the same): a formula's edit moves a path's count by a few ops, a kernel "
                     "per chunk or per block again multiplies it (x50 is planted and caught)",
                     r"bench_device_cost\.LaunchesPerRender\.")
KERNEL = Threshold(Family.COUNTED_COST, "asv", 0.05, "the fused kernel compiled for sm_90 with the pinned Triton: "
                   "its instructions per pixel-step and registers repeat exactly; +5 % is a slower inner loop, and a spill (local "
                   "bytes from 0) is any rise", r"bench_device_cost\.FusedKernel\.")
PARITY_LINE = Threshold(Family.PARITY, "both", PARITY_MIN_R, "the acceptance line of every golden case: a render "
                        "below it no longer matches nanoBragg.c")
PARITY = Threshold(Family.PARITY, "asv", 0.0, "1 - r is exact: any rise over the best recorded is a changed image",
                   r"bench_parity\.")
DETERMINISM = Threshold(Family.IMAGE_CHANGED, "both", 0.0, "an image hash has no magnitude: any change of the bits "
                        "within one machine class", r"bench_determinism\.")
REPRODUCIBILITY = Threshold(Family.RUNS_DIFFER, "both", 0.0, "two runs of one input either agree bit for bit or "
                            "not", r"bench_reproducibility\.")
ENGINE_TIMING = Threshold(Family.TIMING, "asv", 0.05, "a timing step of 5 % is a suspect; re-measuring both commits "
                          "interleaved decides (docs/tracking.md)", r"bench_engine\.PathThroughput\.")
MEMORY = Threshold(Family.PEAK_MEMORY, "asv", 0.25, "peak memory moves with the allocator's behaviour, not with load "
                   "(docs/tracking.md)", r"bench_engine\.LargeDetectorMemory\.peakmem_")
CLI_TIMING = Threshold(Family.TIMING, "asv", 0.25, "the detsim command (interpreter start, torch's import, a small "
                       "render) scatters up to x1.23 between unchanged commits recorded alone", r"bench_cli\.")
ASV_DEFAULT = Threshold(Family.TIMING, "asv", 0.05, "asv's own default, for every benchmark no other row's asv_regex "
                        "matches (the engine's timings and throughput); a step over it is a suspect until re-measured")
BENCH_TIMING = Threshold(Family.TIMING, "bench", 0.75, "CI runners' noise: one benchmark's calibrated time moved up to "
                         "x1.55 between unchanged runs on a loaded 2-vCPU runner (docs/bench-gate.md)")
BENCH_SUITE = Threshold(Family.TIMING, "bench", 0.50, "a device's geometric mean: midway between the worst unchanged "
                        "mean, x1.26, and the weakest planted 2x, x1.82 (docs/bench-gate.md)")
TARGET_PARITY = Threshold(Family.PARITY, "target", 10.0, "a factor on 1 - r: a port's real regressions are mostly far "
                          "inside the acceptance line (the public port's 1 - r grew x14,000 at one commit and never "
                          "crossed it), and an unchanged build repeats its 1 - r exactly")

TARGET_MEMORY = Threshold(Family.PEAK_MEMORY, "target", 0.25, "a target's peak memory, as detsim's: it moves with the "
                          "allocator's behaviour, not with load")
TARGET_TIMING = Threshold(Family.TIMING, "target", 0.25, "a target's whole process (interpreter start, its imports, a "
                          "render), as detsim's command: a step is a suspect, re-timed at both commits' installs")
TARGET_COST = Threshold(Family.COUNTED_COST, "target", 0.02, "a target's whole process counted by callgrind, "
                        "judged as detsim's counts: the planted port's numpy command counts the same instructions exactly, built once or "
                        "twice, and a torch render of it repeats within 0.001 % (docs/target-counts.md): +2 % is a "
                        "change of the code, never load")

TABLE = (COST, LAUNCHES, KERNEL, PARITY_LINE, PARITY, DETERMINISM, REPRODUCIBILITY, ENGINE_TIMING, MEMORY, CLI_TIMING,
         ASV_DEFAULT, BENCH_TIMING, BENCH_SUITE, TARGET_PARITY, TARGET_MEMORY, TARGET_TIMING, TARGET_COST)
COST_THRESHOLD = COST.value
DEFAULT_THRESHOLD = ASV_DEFAULT.value

# The levels of the rank tests: a recorded step of a noisy series other than a timing (Mann-Whitney on the raw
# samples either side), and a timing step re-measured in paired rounds (Wilcoxon signed-rank on their log ratios).
ALPHA = 0.01  # one-sided level of both tests
EXTEND_BELOW_P = 0.2  # a re-measurement's first look with p under this (and not under ALPHA) gets more rounds


def asv_thresholds() -> dict[str, float]:
    """The rows asv holds, as asv.conf.json's ``regressions_thresholds`` must read."""
    return {row.asv_regex: row.value for row in TABLE if row.asv_regex}
