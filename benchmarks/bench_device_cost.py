"""What a render would ask of a GPU, counted on the CPU: deterministic costs a CPU-only CI tracks per commit.

* ``LaunchesPerRender``: one render of P2@16 (float32) on each path (eager, compiled, triton under Triton's
  interpreter) after a warm-up render, counted in a fresh interpreter by the working tree's counter
  (``detsim/track/measure/launches.py`` states what a launch, a copy and a sync are): kernel launches
  (aten kernels, Triton kernels, compiled graph calls), host-device copies and host syncs, a track each.
  The count is the render's as planned for the CPU (its chunks and blocks); the setup is prepared before
  and not counted (``tests/rendering/test_setup.py`` holds prepare to one copy). Triton kernels are counted,
  not run (``count_render(..., run_triton=False)``: the counts are the same, see the counter's rule). ~15 s
  per commit (2026-11-29, this machine, 2 interleaved samples: 14-16 s wall and ~8.6 CPU s, against 21-24 s
  and ~12 CPU s before), most of it the compiled path's compilation and the imports.
* ``FusedKernel``: the fused whole-image kernel compiled for sm_90 with no GPU
  (``detsim.track.gpu.kernel_report.fused_kernel_report``, the commit's own): instructions per pixel·step of
  its innermost loop, registers per thread, local (spilled) bytes per thread, per dtype. A commit without
  the report is skipped with one line.

Both are exact: ``bench_device_cost.`` rows of the thresholds table (docs/thresholds.md) judge them in the
``cost`` family.
"""

from __future__ import annotations

from . import common

costs = common.device_costs


class LaunchesPerRender:
    params = [list(costs.LAUNCH_MODES)]
    param_names = ["mode"]
    version = "1"
    rounds = 1  # a count is deterministic: one process is enough
    repeat = 1
    number = 1
    timeout = 600

    def setup_cache(self):
        try:
            return common.count_launches(costs.LAUNCH_MODES)
        except Exception as exc:  # noqa: BLE001 - every track of this commit is skipped with the reason
            return {mode: {"skip": f"the launch count failed: {exc}".splitlines()[0]} for mode in costs.LAUNCH_MODES}

    setup_cache.timeout = 600

    def setup(self, counts, mode):
        if "skip" in counts[mode]:
            raise NotImplementedError(counts[mode]["skip"])

    def track_launches(self, counts, mode):
        return counts[mode][costs.LAUNCHES]

    track_launches.unit = costs.LAUNCHES
    track_launches.pretty_name = f"kernel launches of one {costs.LAUNCH_WORKLOAD} render (counted on the CPU)"

    def track_copies(self, counts, mode):
        return counts[mode][costs.COPIES]

    track_copies.unit = costs.COPIES
    track_copies.pretty_name = f"host-device copies of one {costs.LAUNCH_WORKLOAD} render (counted on the CPU)"

    def track_syncs(self, counts, mode):
        return counts[mode][costs.SYNCS]

    track_syncs.unit = costs.SYNCS
    track_syncs.pretty_name = f"host syncs of one {costs.LAUNCH_WORKLOAD} render (counted on the CPU)"


class FusedKernel:
    params = [["float32", "float64"]]
    param_names = ["dtype"]
    version = "1"
    rounds = 1
    repeat = 1
    number = 1
    timeout = 600

    def setup_cache(self):
        try:
            from detsim.track.gpu.kernel_report import fused_kernel_report
        except ImportError:
            return {"skip": "this commit has no compile-only kernel report (detsim.track.gpu.kernel_report)"}
        out = {}
        for dtype in self.params[0]:
            try:
                report = fused_kernel_report(dtype)
            except Exception as exc:  # noqa: BLE001 - this dtype's tracks are skipped with the reason
                out[dtype] = {"skip": f"the kernel report failed: {exc}".splitlines()[0]}
                continue
            out[dtype] = {unit: getattr(report, field) for unit, field in costs.KERNEL_FIELDS.items()}
        return out

    setup_cache.timeout = 600

    def setup(self, reports, dtype):
        if "skip" in reports:
            raise NotImplementedError(reports["skip"])
        if "skip" in reports[dtype]:
            raise NotImplementedError(reports[dtype]["skip"])

    def track_instructions_per_step(self, reports, dtype):
        value = reports[dtype][costs.INSTRUCTIONS_PER_STEP]
        if value is None:
            raise NotImplementedError("the fused kernel has no innermost loop to count")
        return value

    track_instructions_per_step.unit = costs.INSTRUCTIONS_PER_STEP
    track_instructions_per_step.pretty_name = ("fused kernel: SASS instructions per pixel-step (sm_90, compiled on "
                                               "the CPU)")

    def track_registers(self, reports, dtype):
        return reports[dtype][costs.REGISTERS]

    track_registers.unit = costs.REGISTERS
    track_registers.pretty_name = "fused kernel: registers per thread (sm_90)"

    def track_local_bytes(self, reports, dtype):
        return reports[dtype][costs.LOCAL_BYTES]

    track_local_bytes.unit = costs.LOCAL_BYTES
    track_local_bytes.pretty_name = "fused kernel: local (spilled) bytes per thread (sm_90)"
