"""Engine: time per pixel·step and peak memory of ``detsim.simulate`` (no file I/O, no argument parsing).

Only what a timing can catch and the instruction counts (``bench_cost``) cannot is timed here, on
nanoBragg's two reference workloads (P1: 1024², 1 step per pixel; P2: 200 steps per pixel at 256²), eager,
one torch thread, each dtype (CUDA combinations skip on machines without a GPU); docs/tracking.md says why
each timed benchmark is worth its seconds and what moved to the bench gate. ``LargeDetectorMemory`` is the
peak memory of the 4096² render, where the chunking bound shows.
"""

from __future__ import annotations

import torch

from .common import (
    DEVICES, DTYPES, P4096, PATH_WORKLOADS, available_modes, pin_threads, require_device, simulate, timing,
    steady_allocator, workload_config,
)

ASV_PATH_WORKLOADS = ("P1", "P2")  # PathThroughput's workloads here (P4096 is the bench gate's)
ASV_PATH_MODES = ("eager",)  # PathThroughput's modes here (the bench gate times every path)


class PathThroughput:
    """CPU nanoseconds (wall on a GPU) per pixel·step on P1 (1024², 1 step per pixel) and P2 (200 steps
    per pixel, at 256²), eager: nanoBragg's unit turned the way asv reads every number, lower is better
    (1000 / this = million pixel·steps per second). Best of 3 calls after a warm-up on a small detector,
    with glibc's allocator held steady (``common.steady_allocator``). The compiled path is not timed per
    commit (each compiled process costs seconds of tracing): every path on P1, P2 and 4096² is timed by
    the bench gate (``bench/``)."""

    params = [list(ASV_PATH_WORKLOADS), list(ASV_PATH_MODES), list(DTYPES), list(DEVICES)]
    param_names = ["workload", "mode", "dtype", "device"]
    unit = "ns/pixel-step"
    version = "3"  # 2: nanoseconds per pixel-step (was million pixel-steps per second), eager P1 and P2 only;
    # 3: timed with common.steady_allocator
    timeout = 900
    calls = 3

    def setup(self, workload, mode, dtype, device):
        pin_threads()
        steady_allocator()
        self.device = require_device(device)
        if mode not in available_modes(device):
            raise NotImplementedError(f"mode {mode!r} does not run on {device} with this commit")
        self.workload = PATH_WORKLOADS[workload]
        self.config = workload_config(self.workload)
        simulate(workload_config(self.workload.resized(64)), device=self.device, dtype=DTYPES[dtype], mode=mode)

    def track_ns_per_pixel_step(self, workload, mode, dtype, device):
        call = lambda: simulate(self.config, device=self.device, dtype=DTYPES[dtype], mode=mode)  # noqa: E731
        runs = timing.timed_calls(torch, call, self.device, self.calls)
        best_s = min(t.cpu_s if self.device.type == "cpu" else t.wall_s for t in runs)
        return round(best_s / self.workload.pixel_steps * 1e9, 4)


class LargeDetectorMemory:
    """Peak resident memory of a process rendering the 4096² detector on the CPU (the chunking bound;
    includes torch's ~250 MB)."""

    params = [list(DTYPES)]
    param_names = ["dtype"]
    version = "1"
    timeout = 300

    def setup(self, dtype):
        pin_threads()
        self.config = workload_config(P4096)

    def peakmem_simulate_4096(self, dtype):
        simulate(self.config, device=torch.device("cpu"), dtype=DTYPES[dtype])
