"""Benchmarks of the public ``detsim.simulate`` on golden cases, each checked against nanoBragg.c.

Workloads (each in float64 and float32, on cpu and, when present, cuda):

* ``p1_small``: ``g01_hkl_nointerp``, a 256×256 detector, structure factors from a P1 HKL file,
  one sampling step per pixel.
* ``phi_40steps``: ``j01_phi_osc_phisteps``, 192×192 with 10 phi steps × 4 subpixels = 40 steps.

Each benchmark times ``simulate`` (setup and pixel loop), then asserts the image is finite, has the
case's shape and dtype and reaches Pearson r >= PARITY_MIN_R against the golden image, and records the
device, dtype, thread count, torch version, Pearson r and image sha256 in ``extra_info`` for the gate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import detsim
from conftest import apply_fault, image_sha256, load_workload, pearson_r, run_info, synchronized
from detsim.track.gate.cmd_bench_gate import PARITY_MIN_R

# workload -> (golden case, timed rounds): about 1 s and 2 s of CPU per dtype on one current x86 core
WORKLOADS = {
    "p1_small": ("g01_hkl_nointerp", 50),
    "phi_40steps": ("j01_phi_osc_phisteps", 21),
}


@pytest.fixture(scope="module", params=list(WORKLOADS))
def workload(request):
    case_id, rounds = WORKLOADS[request.param]
    return request.param, rounds, load_workload(case_id)


def test_simulate(benchmark, workload, device, dtype, planted):
    name, rounds, golden = workload

    def simulate_planted():
        for _ in range(planted.slowdown):
            image = detsim.simulate(golden.config, device=device, dtype=dtype)
        return image

    timed = synchronized(simulate_planted, device)
    image = apply_fault(benchmark.pedantic(timed, rounds=rounds, warmup_rounds=1), planted.fault)
    ours = image.detach().cpu().double().numpy()
    finite = bool(np.isfinite(ours).all())
    r = pearson_r(ours, golden.reference) if finite else math.nan
    benchmark.extra_info.update(
        role="simulate", workload=name, case=golden.case["id"], **run_info(device, dtype),
        pearson_r=r if math.isfinite(r) else None, sha256=image_sha256(image),
    )
    assert tuple(image.shape) == tuple(golden.case["shape"])
    assert image.dtype == dtype
    assert finite, f"{name}: the image has non-finite pixels"
    assert r >= PARITY_MIN_R, f"{name} ({golden.case['id']}): Pearson r = {r:.8f} < {PARITY_MIN_R}"
