"""The Triton kernel has no atomics: compiled for an H100 (no GPU needed), its IR and PTX hold none, while a
planted atomic add is found in both."""

import os

import pytest

triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from detsim.rendering import lattice_factor_triton  # noqa: E402
from detsim.track.gpu.jobs import (DRY_TARGET, AtomicsJob, atomic_operations, atomics_job, compile_for,  # noqa: E402
                                   judge_atomics)
from detsim.track.base.status import Status  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1",
                                reason="under the interpreter triton.jit compiles nothing")


@triton.jit
def _planted(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs), axis=0))


def test_a_planted_atomic_is_found_in_the_ir_and_the_ptx():
    found = atomic_operations(compile_for(_planted, "fp32", {"N": 32}, GPUTarget(*DRY_TARGET)))
    assert any(op.startswith("tt.atomic_") for op in found) and any(op.startswith(("atom.", "red.")) for op in found)


def test_the_kernel_compiles_to_ptx_without_an_atomic():
    asm = compile_for(lattice_factor_triton._square_lattice_kernel, "fp32",
                      {"J": 3, "BLOCK_P": lattice_factor_triton.BLOCK_P, "BLOCK_L": lattice_factor_triton.BLOCK_L},
                      GPUTarget(*DRY_TARGET))
    assert asm["ptx"].count("\n") > 100 and atomic_operations(asm) == []


@pytest.mark.slow
def test_every_variant_the_engine_launches_is_free_of_atomics():
    data = atomics_job(AtomicsJob("cpu"))
    assert len(data["variants"]) == 6 and judge_atomics(data) == (Status.OK, "")


def test_the_judge_fails_on_an_atomic_and_refuses_an_empty_search():
    assert judge_atomics({"variants": {"v": {"atomics": ["atom.global.add.f32"], "ptx_lines": 9}}})[0] is Status.FAILED
    assert judge_atomics({"variants": {"v": {"atomics": [], "ptx_lines": 0}}})[0] is Status.CRASHED
