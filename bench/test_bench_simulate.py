"""Benchmarks of the public ``detsim.simulate`` on golden cases, each checked against nanoBragg.c.

Workloads (each in float64 and float32, on cpu and, when present, cuda):

* ``p1_small``: ``g01_hkl_nointerp``, a 256×256 detector, structure factors from a P1 HKL file,
  one sampling step per pixel.
* ``phi_40steps``: ``j01_phi_osc_phisteps``, 192×192 with 10 phi steps × 4 subpixels = 40 steps.

Each benchmark times ``simulate`` (setup and pixel loop), then asserts the image is finite, has the
case's shape and dtype and reaches Pearson r >= PARITY_MIN_R against the golden image, and records its
machine class (device, dtype, thread count, torch version, CPU class), Pearson r, image sha256 and, on
the CPU, the instructions of one render of the case (bench/conftest.py) in ``extra_info`` for the gate.
"""

from __future__ import annotations

import numpy as np
import pytest

import detsim
from conftest import Rounds, apply_fault, load_workload, record_instructions, run_info, synchronized
from detsim.track.measure.cost import CostSpec
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import PARITY_MIN_R, passes_parity, pearson_r

# workload -> (golden case, timed rounds): about 1 s and 2 s of CPU per dtype on one current x86 core
GOLDEN_WORKLOADS = {
    "p1_small": ("g01_hkl_nointerp", 50),
    "phi_40steps": ("j01_phi_osc_phisteps", 21),
}


@pytest.fixture(scope="module", params=list(GOLDEN_WORKLOADS))
def workload(request):
    case_id, rounds = GOLDEN_WORKLOADS[request.param]
    return request.param, rounds, load_workload(case_id)


def test_simulate(benchmark, workload, device, dtype, planted):
    name, rounds, golden = workload

    def simulate_planted():
        for _ in range(planted.slowdown):
            image = detsim.simulate(golden.config, device=device, dtype=dtype)
        return image

    rounds_seen = Rounds(simulate_planted, planted.fault)
    timed = synchronized(rounds_seen, device)
    image = apply_fault(benchmark.pedantic(timed, rounds=rounds, warmup_rounds=1), planted.fault)
    ours = image.detach().cpu().double().numpy()
    finite = bool(np.isfinite(ours).all())
    r = pearson_r(ours, golden.reference)  # None for an image with non-finite pixels
    benchmark.extra_info.update(
        role="simulate", workload=name, case=golden.case.id, **run_info(device, dtype),
        pearson_r=r, sha256=image_sha256(image),
        sha256_rounds=rounds_seen.sha256s(),
    )
    if device == "cpu":  # one render of the case itself, counted under valgrind
        spec = CostSpec(golden.case.id, str(dtype).removeprefix("torch."))
        record_instructions(benchmark, spec.label, spec=spec)
    assert tuple(image.shape) == tuple(golden.case.shape)
    assert image.dtype == dtype
    assert finite, f"{name}: the image has non-finite pixels"
    assert passes_parity(r), f"{name} ({golden.case.id}): Pearson r = {r} < {PARITY_MIN_R}"
