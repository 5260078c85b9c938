"""The calibration workload: a fixed amount of torch arithmetic that does not use detsim.

It runs in the same pytest session as the simulate benchmarks, so it sees the same machine, load and
thread count; ``detsim-track bench-gate`` divides every benchmark's min time by the calibration's min
time on the same device, which cancels most of the runner's speed and load. Its op mix (sines, a
division, an exponential, a reduction over a large float64 vector) resembles the engine's pixel loop.
Never change it without refreshing the baseline: every calibrated ratio depends on it.
"""

from __future__ import annotations

import inspect

import torch

from conftest import record_instructions, run_info, synchronized

SIZE = 1 << 19  # about 10 ms on one core of a current x86 CPU
ROUNDS = 50


def calibration_workload(x: torch.Tensor) -> torch.Tensor:
    """Sum of a squared interference function sin(5x)/sin(x) under a Gaussian envelope."""
    s = torch.sin(x)
    ratio = torch.sin(5.0 * x) / torch.where(s.abs() > 1e-12, s, torch.full_like(s, 1e-12))
    return (ratio * ratio * torch.exp(-1e-3 * x * x)).sum()


def test_calibration(benchmark, device):
    x = torch.linspace(0.01, 64.0, SIZE, dtype=torch.float64, device=device)
    result = benchmark.pedantic(synchronized(calibration_workload, device), args=(x,),
                                rounds=ROUNDS, warmup_rounds=1)
    benchmark.extra_info.update(role="calibration", **run_info(device, torch.float64))
    if device == "cpu":  # one round, counted under valgrind
        setup = (inspect.getsource(calibration_workload) +
                 f"_x = torch.linspace(0.01, 64.0, {SIZE}, dtype=torch.float64)")
        record_instructions(benchmark, f"calibration {SIZE}", setup, "calibration_workload(_x)")
    assert torch.isfinite(result)
