"""Throughput of every execution path on the reference workloads, in pixel·steps per second.

Workloads are those of :mod:`detsim.track.base.workloads` (``detsim-track speed`` times nanoBragg.c on the
same command lines): P1 (1024², 1 step), P2 (200 steps per pixel, on 256² instead of 1024² so that a
round takes under a second: ``P2@256``, the name ``extra_info.workload`` records) and P4096 (4096², 1 step).
Paths: every mode of ``detsim.rendering.engine.MODES`` that runs on the device, in float64 and float32. Test ids
keep the base name (``test_path[cpu-float64-P2-eager]``), so the baseline matches by name. Eager CPU
paths also record the instructions of one render of a small variant (``COUNTED``; bench/conftest.py).

There is no nanoBragg image of these workloads in the repository, so parity here is Pearson r against
detsim's eager float64 image of the same workload on the same device (``extra_info.parity_reference``);
the golden-case benchmarks in test_bench_simulate.py check against nanoBragg.c itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import detsim
from conftest import Rounds, apply_fault, record_instructions, run_info, synchronized
from detsim.track.measure.cost import CostSpec
from detsim import config_from_argv, MODES, available_modes
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import PARITY_MIN_R, passes_parity, pearson_r
from detsim.track.base.workloads import WORKLOADS

# workload -> (detector side used here, timed rounds); the test id keeps the workload's base name
SIZES = {"P1": (1024, 5), "P2": (256, 3), "P4096": (4096, 2)}
# workload -> the small variant whose instructions are counted (the full sizes take minutes under
# valgrind); P4096 is P1's per-pixel work on more pixels, so it shares P1's count
COUNTED = {"P1": "P1@128", "P2": "P2@32", "P4096": "P1@128"}

_references: dict[tuple[str, str], np.ndarray] = {}


def _reference(name: str, device: str) -> np.ndarray:
    """detsim's eager float64 image of a workload, rendered once per session."""
    if (name, device) not in _references:
        workload = WORKLOADS[name].resized(SIZES[name][0])
        image = detsim.simulate(workload.config(config_from_argv), device=device, dtype=torch.float64)
        _references[name, device] = image.cpu().numpy()
    return _references[name, device]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(SIZES))
def test_path(benchmark, name, mode, device, dtype, planted):
    if mode not in available_modes(device):
        pytest.skip(f"mode {mode} does not run on {device} here")
    pixels, rounds = SIZES[name]
    workload = WORKLOADS[name].resized(pixels)
    config = workload.config(config_from_argv)
    detsim.simulate(workload.resized(64).config(config_from_argv), device=device, dtype=dtype, mode=mode)  # compiles

    def simulate_planted():
        for _ in range(planted.slowdown):
            image = detsim.simulate(config, device=device, dtype=dtype, mode=mode)
        return image

    rounds_seen = Rounds(simulate_planted, planted.fault)
    timed = synchronized(rounds_seen, device)
    image = apply_fault(benchmark.pedantic(timed, rounds=rounds, warmup_rounds=0), planted.fault)
    r = pearson_r(image.detach().cpu().double().numpy(), _reference(name, device))  # None if non-finite
    benchmark.extra_info.update(
        role="path", workload=workload.name, pixels=pixels, steps=workload.steps, mode=mode,
        **run_info(device, dtype), pixel_steps_per_s=workload.pixel_steps / benchmark.stats.stats.min,
        pearson_r=r, parity_reference="detsim eager float64", sha256=image_sha256(image),
        sha256_rounds=rounds_seen.sha256s(),
    )
    if device == "cpu" and mode == "eager":
        spec = CostSpec(COUNTED[name], str(dtype).removeprefix("torch."))
        record_instructions(benchmark, spec.label, spec=spec)
    elif device == "cpu":
        record_instructions(benchmark, "", note=f"instructions not counted: the {mode} path under valgrind "
                            "takes minutes to compile")
    assert tuple(image.shape) == (pixels, pixels) and image.dtype == dtype
    assert passes_parity(r), f"{workload.name} {mode} {dtype}: Pearson r = {r} < {PARITY_MIN_R} against eager float64"
