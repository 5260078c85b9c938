"""Proof that the Triton kernel (:mod:`detsim.rendering.lattice_factor_triton`) uses no atomics: it is compiled
for a CUDA target and its Triton IR and PTX are searched for atomic operations (``tt.atomic_*``; PTX
``atom.``/``red.``). A kernel without them sums each pixel in one program, in one order, so its results cannot
depend on which program runs first. Compiling needs no GPU (Triton's own LLVM and ptxas); on a CUDA device the
target is that device's. Input: the job {"device"}; output: each variant's atomics (:func:`judge` judges them)."""

from __future__ import annotations

import re

from detsim.track.base.status import Status

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
    variant the engine launches), for the device's target (cpu: an H100's), and lists each variant's atomics. On
    CUDA the kernel is also launched once per variant and the kernels Triton compiled for those launches are
    searched too (``launched``): the very code that runs."""
    from triton.backends.compiler import GPUTarget

    from detsim.rendering import lattice_factor_triton as triton_kernels

    if job["device"] == "cuda":
        from triton.runtime import driver

        target = driver.active.get_current_target()
    else:
        target = GPUTarget(*DRY_TARGET)
    fn = triton_kernels._square_lattice_kernel
    out = {"target": f"{target.backend} sm_{target.arch}", "variants": {}, "errors": []}
    for dtype, pointer_type in DTYPES.items():
        for axes in (1, 2, 3):
            try:
                asm = compile_for(fn, pointer_type, {"J": axes, "BLOCK_P": triton_kernels.BLOCK_P,
                                                     "BLOCK_L": triton_kernels.BLOCK_L}, target)
            except Exception as exc:  # noqa: BLE001 - another Triton's compile API: the launched kernels still count
                out["errors"].append(f"compiling {dtype} J={axes}: {type(exc).__name__}: {exc}".splitlines()[0])
                continue
            out["variants"][f"{dtype} J={axes}"] = _searched(asm)
    if job["device"] == "cuda":
        for index, asm in enumerate(launched(fn, triton_kernels.square_lattice_lane_sum)):
            out["variants"][f"launched #{index}"] = _searched(asm)
    return out


def _searched(asm: dict) -> dict:
    return {"atomics": atomic_operations(asm), "ptx_lines": asm.get("ptx", "").count("\n")}


def launched(fn, launch) -> list[dict]:
    """Launch ``launch`` (the kernel's wrapper) on tiny CUDA inputs in each dtype for 1 to 3 axes, then return
    the asm of every kernel ``fn`` has compiled (Triton's per-device kernel caches)."""
    import torch

    for dtype in (torch.float64, torch.float32):
        for axes in (1, 2, 3):
            d = torch.rand(70, 3, dtype=dtype, device="cuda")
            launch(d, torch.rand(3, axes, 40, dtype=dtype, device="cuda"),
                   torch.rand(axes, 40, dtype=dtype, device="cuda"), torch.full((axes,), 5.0, dtype=dtype,
                                                                               device="cuda"))
    torch.cuda.synchronize()
    found = []
    for entry in getattr(fn, "device_caches", {}).values():
        for part in entry if isinstance(entry, tuple) else (entry,):
            if isinstance(part, dict):
                found += [kernel.asm for kernel in part.values() if hasattr(kernel, "asm")]
    return found


def judge(data: dict) -> tuple[Status, str]:
    if not data["variants"] or any(not v["ptx_lines"] for v in data["variants"].values()):
        why = "; ".join(data.get("errors", [])[:2])
        return Status.CRASHED, "no PTX was searched for some variant" + (f" ({why})" if why else "")
    found = {name: v["atomics"] for name, v in data["variants"].items() if v["atomics"]}
    if found:
        return Status.FAILED, "atomics in the Triton kernel: " + "; ".join(f"{k}: {', '.join(v)}"
                                                                              for k, v in found.items())
    return Status.OK, ""
