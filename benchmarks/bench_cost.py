"""Instructions executed by one eager CPU render, counted under valgrind: a deterministic cost.

One ``valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`` process per commit counts
every workload (``common.count_instructions_many``, with the harness of ``detsim/track/base/callgrind.py``):
it builds the inputs uninstrumented, renders each workload once to warm up, then renders each again in
a thread of its own between callgrind's start/stop client requests, so each workload gets its own total
and torch is imported once (about 15 s for all three, against 15-20 s per workload in a process each).
Two processes agree to the instruction; a rise of 2 % (``regressions_thresholds`` in asv.conf.json)
is a real change of the code's work. Workloads are small:

* ``P1@64``: nanoBragg's P1, one step per pixel, on 64²;
* ``P2@32``: P2's 200 steps per pixel on 32²;
* ``g01_hkl_nointerp``: the golden case the bench suite times (256², an HKL file).

A commit whose counted code and environment are byte for byte those of a commit counted before gets
that commit's counts without running valgrind again (``counts.py`` says what is compared).

Where valgrind or the hooks (PyPI ``pytest-codspeed``) are missing, setup raises NotImplementedError
with one line naming the package, and asv records a skip. What a count cannot see (memory and cache
effects, threads, AVX-512 kernels) is in docs/tracking.md; the timings stay recorded beside it.
"""

from __future__ import annotations

from . import common, counts

COUNTED = ["P1@64", "P2@32", "g01_hkl_nointerp"]


class InstructionCounts:
    params = [COUNTED]
    param_names = ["workload"]
    unit = "instructions"
    version = "2"  # bump only when the counted region or the workloads change (2: one process, a thread each)
    rounds = 1  # a count is deterministic: one process is enough
    repeat = 1
    timeout = 600

    def setup_cache(self):
        reason = common.callgrind.not_measured_reason()
        if reason:
            return {"not measured": reason}
        workloads = [w for w in COUNTED if "@" in w or common.reads_arguments()]
        found, _ = counts.reuse_or_count(workloads, common.count_instructions_many)
        return found

    setup_cache.timeout = 600

    def setup(self, counts, workload):
        if "not measured" in counts:
            raise NotImplementedError(counts["not measured"])
        if workload not in counts:
            raise NotImplementedError(common.NO_ARGUMENT_READER)

    def track_instructions(self, counts, workload):
        return counts[workload]

    track_instructions.pretty_name = "instructions of one eager CPU render (valgrind)"
