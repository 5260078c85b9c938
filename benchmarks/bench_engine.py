"""Engine: time, peak memory and time per pixel·step of ``detsim.simulate`` (no file I/O, no argument parsing).

Axes: detector side (pixels) × steps per pixel × dtype × device, plus nanoBragg's two reference
workloads (P1: 1024², 1 step; P2: mosaic 10 × phi 5 × oversample 2 = 200 steps, at a reduced 128²).
One torch thread everywhere; CUDA combinations skip on machines without a GPU. ``MachineReference``
does no detsim work: its history shows how loaded the machine was while each commit was measured,
which ``detsim-track`` reports beside a suspected timing step.
"""

from __future__ import annotations

import torch

from .common import (
    DEVICES, DTYPES, P1, P2, P4096, PATH_WORKLOADS, SWEEP_PIXELS, SWEEP_STEPS, available_modes, clock, pin_threads,
    require_device, simulate, steady_allocator, sweep_workload, use_wall_clock, workload_config,
)

ASV_PATH_WORKLOADS = ("P1", "P2")  # PathThroughput's workloads here (P4096 is the bench gate's)
ASV_PATH_MODES = ("eager",)  # PathThroughput's modes here (EngineModes times the compiled path)

# execution modes measured by EngineModes; static because asv indexes parameters by position, so the
# list must not depend on the commit installed. Add a mode here when detsim gains one.
MODES = ("eager", "compiled", "triton")


class _Timed:
    """Sampling shared by the timings: CPU seconds (wall seconds on a GPU), 3-5 samples per commit in
    one round, one call per sample, glibc's allocator held steady (``common.steady_allocator``). Few
    samples on purpose: a step in this history is only a suspect until ``detsim-track`` re-measures it
    at both commits, and the instruction counts (bench_cost) are the exact record of the code's work."""

    timer = staticmethod(clock)
    rounds = 1
    repeat = (3, 5, 0.5)
    number = 1
    warmup_time = 0.1


class EngineSweep(_Timed):
    """simulate() over detector size × steps per pixel × dtype × device (sizes reduced from 1024)."""

    params = [list(SWEEP_PIXELS), list(SWEEP_STEPS), list(DTYPES), list(DEVICES)]
    param_names = ["pixels", "steps_per_pixel", "dtype", "device"]
    version = "2"  # 2: timed with common.steady_allocator

    def setup(self, pixels, steps, dtype, device):
        pin_threads()
        steady_allocator()
        self.device = require_device(device)
        self.config = workload_config(sweep_workload(pixels, steps))

    def time_simulate(self, pixels, steps, dtype, device):
        simulate(self.config, device=self.device, dtype=DTYPES[dtype])


class NanoBraggWorkloads(_Timed):
    """nanoBragg's P1 (1024², 1 step) and a P2-like run (200 steps per pixel at 128² instead of 1024²)."""

    params = [["P1", "P2"], list(DTYPES), list(DEVICES)]
    param_names = ["workload", "dtype", "device"]
    repeat = (3, 3, 1.0)  # exactly 3 samples
    version = "2"  # 2: timed with common.steady_allocator
    timeout = 300

    def setup(self, workload, dtype, device):
        pin_threads()
        steady_allocator()
        self.device = require_device(device)
        self.config = workload_config({"P1": P1, "P2": P2}[workload])

    def time_simulate(self, workload, dtype, device):
        simulate(self.config, device=self.device, dtype=DTYPES[dtype])


class EngineModes(_Timed):
    """Each execution path of the engine on one workload (128², 10 steps per pixel).

    "compiled" is compiled in setup (torch.compile's first call; later processes reuse its cache), so
    only the steady state is timed. "triton" runs on a GPU only here: Triton's CPU interpreter is
    hundreds of times slower and meant for correctness tests.
    """

    params = [list(MODES), list(DTYPES), list(DEVICES)]
    param_names = ["mode", "dtype", "device"]
    version = "2"  # 2: timed with common.steady_allocator
    timeout = 600

    def setup(self, mode, dtype, device):
        pin_threads()
        steady_allocator()
        self.device = require_device(device)
        if mode not in available_modes(device):
            raise NotImplementedError(f"mode {mode!r} does not run on {device} with this commit")
        self.config = workload_config(sweep_workload(128, 10))
        simulate(self.config, device=self.device, dtype=DTYPES[dtype], mode=mode)  # compiles, if it has to

    def time_simulate(self, mode, dtype, device):
        simulate(self.config, device=self.device, dtype=DTYPES[dtype], mode=mode)


class EngineMemory:
    """Peak resident memory of a process running simulate() on the CPU (includes torch's ~200 MB)."""

    params = [[256, 1024], list(SWEEP_STEPS), list(DTYPES)]
    param_names = ["pixels", "steps_per_pixel", "dtype"]
    version = "1"
    timeout = 300

    def setup(self, pixels, steps, dtype):
        pin_threads()
        self.config = workload_config(sweep_workload(pixels, steps))

    def peakmem_simulate(self, pixels, steps, dtype):
        simulate(self.config, device=torch.device("cpu"), dtype=DTYPES[dtype])


class PathThroughput:
    """CPU nanoseconds (wall on a GPU) per pixel·step on P1 (1024², 1 step per pixel) and P2 (200 steps
    per pixel, at 256²), eager: nanoBragg's unit turned the way asv reads every number, lower is better
    (1000 / this = million pixel·steps per second). Best of 3 calls after a warm-up on a small detector.
    The compiled path is timed per commit by ``EngineModes`` (each compiled process costs seconds of
    tracing, a third of a commit's run when every path was here); every path on P1, P2 and 4096² is
    timed by the bench gate (``bench/``), and the 4096² peak memory here (``LargeDetectorMemory``)."""

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
        best_s = float("inf")
        for _ in range(self.calls):
            started = clock()
            simulate(self.config, device=self.device, dtype=DTYPES[dtype], mode=mode)
            best_s = min(best_s, clock() - started)
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


class MachineReference:
    """A fixed torch workload independent of detsim: a complex FFT of a seeded 512² array."""

    timer = staticmethod(clock)
    rounds = 1
    repeat = (3, 5, 0.5)
    version = "2"  # 2: timed with common.steady_allocator

    def setup(self):
        pin_threads()
        steady_allocator()
        use_wall_clock(False)
        generator = torch.Generator().manual_seed(20261122)
        self.field = torch.randn(512, 512, dtype=torch.complex128, generator=generator)

    def time_reference(self):
        torch.fft.fft2(self.field)

    def peakmem_reference(self):
        pass
