"""The device costs the suite counts without a device: what each is, its unit, its workload.

Two kinds, both exact (the same code gives the same numbers on any machine), both in the verdict's ``cost``
family with a threshold row each (:mod:`detsim.track.judge.thresholds`):

* operations per render on each path, counted on the CPU (``detsim/track/measure/launches.py`` says what
  counts): kernels a GPU would launch, copies between host and device, host syncs;
* the fused kernel's code, compiled for a GPU with no GPU (``detsim.track.gpu.kernel_report``): instructions
  per pixel·step of its innermost loop, registers per thread, local (spilled) bytes per thread.
"""

from __future__ import annotations

LAUNCHES, COPIES, SYNCS = "launches", "copies", "syncs"
LAUNCH_UNITS = (LAUNCHES, COPIES, SYNCS)  # per render, one track each
LAUNCH_MODES = ("eager", "compiled", "triton")  # the paths counted (triton under TRITON_INTERPRET=1)
# P2's per-pixel work (200 steps: 2x2 subpixels x 10 domains x 5 phi steps) on 16²: the fused triton path under
# the interpreter renders it twice (warm-up, count) in ~30 s here, P2@32 in ~2 min
LAUNCH_WORKLOAD = "P2@16"
LAUNCH_DTYPE = "float32"  # a GPU's dtype

INSTRUCTIONS_PER_STEP, REGISTERS, LOCAL_BYTES = "instructions/pixel-step", "registers", "local bytes"
KERNEL_UNITS = (INSTRUCTIONS_PER_STEP, REGISTERS, LOCAL_BYTES)
KERNEL_FIELDS = {INSTRUCTIONS_PER_STEP: "instructions_per_step", REGISTERS: "registers", LOCAL_BYTES: "local_bytes"}

DEVICE_COST_UNITS = LAUNCH_UNITS + KERNEL_UNITS
COUNT_UNITS = (LAUNCHES, COPIES, SYNCS, REGISTERS, LOCAL_BYTES)  # whole numbers, shown with every digit
