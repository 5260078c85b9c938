"""Proof that the Triton kernel (:mod:`detsim.triton_kernels`) uses no atomics: it is compiled for a CUDA target
and its Triton IR and PTX are searched for atomic operations (``tt.atomic_*``; PTX ``atom.``/``red.``). A kernel
without them sums each pixel in one program, in one order, so its results cannot depend on which program runs
first. Compiling needs no GPU (Triton's own LLVM and ptxas); on a CUDA device the target is that device's."""

from __future__ import annotations

import re

from detsim.track.gpu.steps import StepStatus

ENTRY = "detsim.track.gpu.atomics:atomics_job"
PTX_ATOMIC = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:atom|red)\.[\w.]+)", re.M)  # atomic and reduction instructions
TTIR_ATOMIC = re.compile(r"\btt\.atomic_\w+")
DRY_TARGET = ("cuda", 90, 32)  # an H100's: backend, compute capability, warp size
DTYPES = {"float64": "fp64", "float32": "fp32"}


def atomic_operations(asm: dict) -> list[str]:
    """The atomic operations in a compiled kernel's ``asm`` (its ``ttir`` and ``ptx`` texts), sorted."""
    found = set(TTIR_ATOMIC.findall(asm.get("ttir", ""))) | set(PTX_ATOMIC.findall(asm.get("ptx", "")))
    return sorted(found)


def compile_for(fn, pointer_type: str, constants: dict, target) -> dict:
    """``fn`` (a ``triton.jit`` function) compiled for ``target``: its asm texts by stage. Pointer arguments
    (named ``*_ptr``) point to ``pointer_type``, other runtime arguments are int32."""
    import triton
    from triton.compiler import ASTSource

    signature = {}
    for param in fn.params:
        if param.is_constexpr:
            signature[param.name] = "constexpr"
        else:
            signature[param.name] = f"*{pointer_type}" if param.name.endswith("_ptr") else "i32"
    compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constants), target=target)
    return {stage: text for stage, text in compiled.asm.items() if isinstance(text, str)}


def atomics_job(job: dict) -> dict:
    """``job``: {"device": "cuda" or "cpu"}. Compiles the kernel in each dtype for 1 to 3 crystal axes (every
    variant the engine launches), for the device's target (cpu: an H100's), and lists each variant's atomics."""
    from triton.backends.compiler import GPUTarget

    from detsim import triton_kernels

    if job["device"] == "cuda":
        from triton.runtime import driver

        target = driver.active.get_current_target()
    else:
        target = GPUTarget(*DRY_TARGET)
    fn = triton_kernels._square_lattice_kernel
    out = {"target": f"{target.backend} sm_{target.arch}", "variants": {}}
    for dtype, pointer_type in DTYPES.items():
        for axes in (1, 2, 3):
            asm = compile_for(fn, pointer_type, {"J": axes, "BLOCK_P": triton_kernels.BLOCK_P,
                                                 "BLOCK_L": triton_kernels.BLOCK_L}, target)
            out["variants"][f"{dtype} J={axes}"] = {"atomics": atomic_operations(asm),
                                                   "ptx_lines": asm.get("ptx", "").count("\n")}
    return out


def judge(data: dict) -> tuple[StepStatus, str]:
    if not data["variants"] or any(not v["ptx_lines"] for v in data["variants"].values()):
        return StepStatus.ERROR, "a variant compiled to no PTX: nothing was searched"
    found = {name: v["atomics"] for name, v in data["variants"].items() if v["atomics"]}
    if found:
        return StepStatus.FAILED, "atomics in the Triton kernel: " + "; ".join(f"{k}: {', '.join(v)}"
                                                                              for k, v in found.items())
    return StepStatus.OK, ""
