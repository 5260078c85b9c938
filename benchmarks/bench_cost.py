"""Instructions executed by one eager CPU render, counted under valgrind: a deterministic cost.

Each count is a fresh ``valgrind --tool=callgrind --instr-atstart=no`` process that builds the inputs
uninstrumented, renders once to warm up and counts a second render between callgrind's start/stop
client requests (``common.count_instructions``, a copy of ``detsim.track.cost``). Two processes agree
within about 0.1 %, so a rise of 2 % (``regressions_thresholds`` in asv.conf.json) is a real change of
the code's work. Workloads are small (each count takes ~15-20 s, mostly the uncounted torch import):

* ``P1@64``: nanoBragg's P1, one step per pixel, on 64²;
* ``P2@32``: P2's 200 steps per pixel on 32²;
* ``g01_hkl_nointerp``: the golden case the bench suite times (256², an HKL file).

Where valgrind or the hooks (PyPI ``pytest-codspeed``) are missing, setup raises NotImplementedError
with one line naming the package, and asv records a skip. What a count cannot see (memory and cache
effects, threads, AVX-512 kernels) is in docs/tracking.md; the timings stay recorded beside it.
"""

from __future__ import annotations

from . import common

COUNTED = ["P1@64", "P2@32", "g01_hkl_nointerp"]


class InstructionCounts:
    params = [COUNTED]
    param_names = ["workload"]
    unit = "instructions"
    version = "1"  # bump only when the counted region or the workloads change
    rounds = 1  # a count is deterministic: one process is enough
    repeat = 1
    timeout = 300

    def setup(self, workload):
        reason = common.cost_not_measured_reason()
        if reason:
            raise NotImplementedError(reason)
        if "@" not in workload and not common.reads_arguments():
            raise NotImplementedError("this commit has no detsim.cli.build_config")

    def track_instructions(self, workload):
        return common.count_instructions(workload)

    track_instructions.pretty_name = "instructions of one eager CPU render (valgrind)"
