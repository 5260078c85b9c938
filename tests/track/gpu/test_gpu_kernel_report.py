"""The compile-only check: the fused whole-image kernel, compiled for an H100 (sm_90) with no device, has no
spills, no out-of-line calls and no atomics; a planted atomic and a planted call are reported."""

import os

import pytest

triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

from detsim.track.gpu.kernel_report import fused_kernel_report, innermost_loop_instructions, kernel_report  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1",
                                reason="under the interpreter triton.jit compiles nothing")


@triton.jit
def _planted_atomic(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs), axis=0))


@triton.jit
def _planted_call(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.sin(tl.load(x_ptr + offs)))  # float64 sine: libdevice's slow path, a call


@pytest.mark.parametrize("kind", ["float32", "float64"])
def test_the_fused_kernel_compiles_clean_for_sm_90(kind):
    report = fused_kernel_report(kind)
    assert report.target == "cuda sm_90" and report.problems() == []
    assert report.local_bytes == 0 and report.calls == () and report.atomics == ()
    assert 0 < report.registers <= 255
    # one pixel a thread: an iteration of the orientation loop is one pixel-step; three gratings need dozens
    assert report.pixel_steps_per_iteration == 1.0 and 40 < report.instructions_per_step < 1000
    assert set(report.to_dict()) >= {"registers", "local_bytes", "calls", "atomics", "instructions_per_step"}


def test_the_fused_kernel_with_every_feature_compiles_clean_for_sm_90():
    report = fused_kernel_report("float64", variant="every feature")  # the most registers of any variant
    assert report.problems() == [] and report.instructions_per_step is not None


def test_the_fused_kernel_with_thread_first_pixels_compiles_clean_and_leaves_the_common_variant_alone():
    first = fused_kernel_report("float32", variant="first sweep")  # a phi sweep from 0: nanoBragg's default
    assert first.problems() == [] and first.instructions_per_step is not None
    common = fused_kernel_report("float32")
    # its innermost loop is the mixed one (each axis picked per pixel): longer than the common loop
    assert first.instructions_per_step > common.instructions_per_step


def test_a_planted_atomic_and_a_planted_call_are_reported():
    atomic = kernel_report(_planted_atomic, "float32", {"N": 128})
    assert atomic.atomics and any("atomic" in line for line in atomic.problems())
    assert atomic.instructions_per_step is None  # no loop
    call = kernel_report(_planted_call, "float64", {"N": 128})
    assert call.calls and any("call" in line for line in call.problems())


def test_the_innermost_loop_is_the_backward_branch_that_holds_no_other():
    sass = "\n".join([
        "        /*0000*/                   MOV R1, c[0x0][0x28] ;",
        "        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;",  # outer loop head
        "        /*0020*/                   FFMA R3, R3, R4, R5 ;",  # inner loop head
        "        /*0030*/                   NOP ;",
        "        /*0040*/                   FMUL R3, R3, R3 ;",
        "        /*0050*/               @P0 BRA 0x20 ;",
        "        /*0060*/               @P1 BRA 0x10 ;",
        "        /*0070*/                   EXIT ;",
    ])
    assert innermost_loop_instructions(sass) == 3  # FFMA, FMUL, BRA (the NOP left out)
    assert innermost_loop_instructions("        /*0000*/                   EXIT ;") is None


def test_the_atomics_step_fails_on_the_fused_kernels_problems():
    from detsim.track.base.status import Status
    from detsim.track.gpu.jobs import judge_atomics

    searched = {"variants": {"v": {"atomics": [], "ptx_lines": 9}}}
    clean = {"float32": {"problems": []}, "float64": {"problems": []}}
    assert judge_atomics({**searched, "fused_kernel": clean}) == (Status.OK, "")
    spilled = {**clean, "float64": {"problems": ["24 bytes of local memory per thread (spills or a call's stack)"]}}
    status, reason = judge_atomics({**searched, "fused_kernel": spilled})
    assert status is Status.FAILED and "float64: 24 bytes" in reason
    assert judge_atomics({**searched, "fused_kernel": {"float32": clean["float32"]}})[0] is Status.CRASHED
