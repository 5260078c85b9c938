"""The fused execution paths (torch.compile and the Triton kernel) against the eager engine."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from _tolerances import COMPILED_VS_EAGER_MAX_REL, COMPILED_VS_EAGER_MIN_R, FUSED_KERNEL
from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.rendering import lattice_factor
from detsim.rendering.engine import MODES, available_modes, prepare, render
from helpers import pearson_r, to_numpy

# Two orientations x two sources x 2x2 subpixels, one crystal axis with N = 1 (skipped by the fused loop).
CASE = SimulationConfig(
    crystal=CrystalConfig(cell=(60, 70, 80, 90, 90, 90), default_F=100, Na=4, Nb=1, Nc=6,
                          misset_deg=(10, 20, 30), mosaic_spread_deg=0.5, mosaic_domains=2),
    beam=BeamConfig(dispersion_pct=2, dispsteps=2),
    detector=DetectorConfig(fpixels=24, spixels=20, pixel_mm=0.4, distance_mm=80),
    sampling=SamplingConfig(oversample=2),
)


def test_fused_kernel_equals_eager_engine_arithmetic(dtype):
    g = torch.Generator().manual_seed(1)
    d = torch.nn.functional.normalize(torch.randn(50, 3, generator=g, dtype=torch.float64), dim=-1).to(dtype)
    B = (torch.randn(3, 2, 7, generator=g, dtype=torch.float64) * 30).to(dtype)
    C = (torch.randn(2, 7, generator=g, dtype=torch.float64) * 30).to(dtype)
    C[0, 0] = float(d[0] @ B[:, 0, 0])  # h exactly 0 in one lane: nanoBragg's N**2 special case
    N = torch.tensor([3.0, 5.0], dtype=dtype)
    h = torch.einsum("px,xjl->pjl", d, B) - C
    frac = h - torch.round(h)
    ratio = torch.sin(torch.pi * frac * N[:, None]) / torch.sin(torch.pi * frac)
    expected = torch.where(frac == 0, (N * N)[:, None], ratio * ratio).prod(1).sum(-1)
    rtol, atol = FUSED_KERNEL[dtype]
    torch.testing.assert_close(lattice_factor.square_lattice_lane_sum(d, B, C, N), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("counts", [(3, 5), (5, 5), (1, 8), (2, 7)])
def test_chebyshev_lane_sum_equals_the_ratio_of_sines(counts, dtype):
    g = torch.Generator().manual_seed(2)
    d = torch.nn.functional.normalize(torch.randn(40, 3, generator=g, dtype=torch.float64), dim=-1).to(dtype)
    B = (torch.randn(3, 2, 9, generator=g, dtype=torch.float64) * 30).to(dtype)
    C = (torch.randn(2, 9, generator=g, dtype=torch.float64) * 30).to(dtype)
    C[0, 0] = float(d[0] @ B[:, 0, 0])  # h exactly 0 in one lane: the polynomial gives the limit N
    N = torch.tensor(counts, dtype=dtype)
    rtol, atol = FUSED_KERNEL[dtype]
    expected = lattice_factor.square_lattice_lane_sum(d, B, C, N)
    torch.testing.assert_close(lattice_factor.chebyshev_lane_sum(counts)(d, B, C, N), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode", ["compiled"])
def test_compiled_matches_eager(mode, dtype):
    setup = prepare(CASE, dtype=dtype)
    eager, _ = render(setup)
    other, _ = render(setup, mode=mode)
    assert other.dtype == dtype
    r = pearson_r(to_numpy(other), to_numpy(eager))
    assert r is not None and r >= COMPILED_VS_EAGER_MIN_R[dtype]
    rel = float((other.double() - eager.double()).abs().max() / eager.double().abs().max())
    assert rel < COMPILED_VS_EAGER_MAX_REL[dtype]


def test_modes_on_this_machine():
    assert set(available_modes("cpu")) <= set(MODES)
    assert {"eager", "compiled"} <= set(available_modes("cpu"))
    with pytest.raises(ValueError, match="mode must be one of"):
        render(prepare(CASE), mode="fast")


TRITON_CHECK = textwrap.dedent("""
    import torch
    from _tolerances import TRITON_VS_EAGER_MAX_REL
    from test_lattice_factor_fused import CASE
    from detsim.rendering.engine import prepare, render
    kernels = {}
    for dtype in (torch.float64, torch.float32):
        setup = prepare(CASE, dtype=dtype)
        eager, _ = render(setup)
        kernels[dtype], _ = render(setup, mode="triton")
        rel = float((kernels[dtype].double() - eager.double()).abs().max() / eager.double().abs().max())
        print(dtype, rel)
        assert rel < TRITON_VS_EAGER_MAX_REL[dtype], rel
    again, _ = render(prepare(CASE), mode="triton")  # a second setup and render: the same bits
    assert again.dtype == torch.float64 and torch.equal(again, kernels[torch.float64])
    print("ok")
""")


# In the slow job; its twins in the default job, also in a fresh interpreter under Triton's interpreter:
# tests/rendering/test_fused_kernel.py's scenarios (render(mode="triton") against eager in both dtypes, the cases
# it fuses and those it leaves to today's path) and tests/track/compare/test_compare_tracer.py's
# test_deterministic_triton_kernels_have_no_divergence (detsim's triton mode, run twice, the same bits)
@pytest.mark.slow
def test_triton_kernel_under_interpreter_matches_eager():
    pytest.importorskip("triton")
    tests_dir = Path(__file__).parents[1]
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), str(tests_dir), str(tests_dir.parent),
                                           os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", TRITON_CHECK], cwd=tests_dir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("ok")


def test_triton_mode_without_cuda_or_interpreter_is_refused(monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the Triton path is available")
    assert "triton" not in available_modes("cpu")
    with pytest.raises(ValueError, match="CUDA device"):
        render(prepare(CASE), mode="triton")


def test_every_cell_count_shares_one_compiled_function_and_its_polynomials_are_data():
    """One compiled graph serves every count (a closure per count shared one code object, so torch.compile
    ran out of recompiles on the golden cases and rendered the rest uncompiled)."""
    first, second = lattice_factor.compiled_square_lattice_lane_sum([5, 5, 5]), lattice_factor.compiled_square_lattice_lane_sum([4, 6, 8])
    assert first.func is second.func and first.args[1] != second.args[1]
    K, odd = lattice_factor.chebyshev_polynomials((4, 6, 8))
    assert all(len(k) == lattice_factor.CHEBYSHEV_TERMS for k in K) and odd == [True, True, True]
    assert lattice_factor.chebyshev_polynomials((5,)) == ([[0.0, 16.0, -12.0, 1.0]], [False])  # U_4 = 16c^4 - 12c^2 + 1


def test_zero_padding_of_a_polynomial_changes_no_bit(dtype):
    c = torch.linspace(-1, 1, 1001, dtype=dtype)
    c_sq = c * c
    for n in range(1, 9):
        coefficients = lattice_factor.chebyshev_u_coefficients(n - 1)
        plain = torch.full_like(c, coefficients[0])
        for a in coefficients[1:]:
            plain = plain * c_sq + a
        padded = torch.zeros_like(c)
        for a in [0.0] * (lattice_factor.CHEBYSHEV_TERMS - len(coefficients)) + coefficients:
            padded = padded * c_sq + a
        assert torch.equal(padded, plain), n
