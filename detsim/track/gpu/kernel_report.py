"""What a Triton kernel costs on the device, read from its compiled code, with no device: the compile-only check.

Triton compiles for any NVIDIA target on a CPU (its own LLVM, and the ptxas and cuobjdump in its
``backends/nvidia/bin``), so a kernel's registers per thread, its local memory (the stack frame: spilled
registers, or a call's frame), its out-of-line calls, its atomics and the instructions of its innermost loop
are facts of the commit, measured on any CI machine:

* registers and local bytes: ``cuobjdump --dump-resource-usage`` of the cubin (``REG``; ``STACK`` + ``LOCAL``);
* calls: PTX ``call`` instructions (an out-of-line function, e.g. libdevice's float64 trigonometric reduction).
  ptxas's own slow paths of IEEE float64 division and square root show in SASS as ``CALL.REL`` to a
  subroutine of the kernel, taken only for operands near the ends of the exponent range: counted apart
  (``sass_subroutine_calls``), not a problem;
* atomics: :func:`detsim.track.gpu.jobs.atomic_operations` (Triton IR and PTX);
* instructions per pixel·step: the SASS instructions (NOPs left out) of the innermost loop, the backward branch
  whose body holds no other, divided by the pixel·steps one iteration does per thread (BLOCK_P pixels over the
  program's threads, one orientation each).

:func:`fused_kernel_report` reports the fused whole-image kernel (:mod:`detsim.rendering.fused_kernel`) in the
variant that renders the common case: a parallelepiped crystal with a constant F, unpolarized beam, no ``-dmin``,
no sensor model.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.gpu.jobs import DRY_TARGET, POINTER_TYPES, atomic_operations, compile_kernel

PTX_CALL = re.compile(r"^\s*(?:@!?%\w+\s+)?call(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$.]+)", re.M)
SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", re.I)
SASS_BRANCH = re.compile(r"^(?:@!?U?P\w+\s+)?BRA(?:\.\w+)*\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", re.I)
RESOURCES = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")

# The fused kernel's variants (its compile-time switches) for the report: the common case (see the module
# docstring), the common case with thread-first pixels (a phi sweep from 0, spec §4.7: nanoBragg's default), and
# every feature at once (HKL table, -dmin, Kahn polarization, sensor, curved detector, thread-first pixels).
FUSED_VARIANT = dict(SHAPE=0, TABLE=False, DMIN=False, POLAR=1, SENSOR=False, POINT_PIXEL=False, CURVED=False,
                     HAS_FIRST_SWEEP=False)
FUSED_VARIANTS = {"common": FUSED_VARIANT, "first sweep": dict(FUSED_VARIANT, HAS_FIRST_SWEEP=True),
                  "every feature": dict(FUSED_VARIANT, TABLE=True, DMIN=True, POLAR=2, SENSOR=True, CURVED=True,
                                        HAS_FIRST_SWEEP=True)}


@dataclass(frozen=True)
class KernelReport:
    """A compiled kernel's cost, from its code for ``target``."""

    kernel: str
    dtype: str  # "float32" or "float64"
    target: str  # e.g. "cuda sm_90"
    registers: int  # per thread
    local_bytes: int  # per thread: stack frame and local memory (spills)
    calls: tuple[str, ...]  # out-of-line functions called (PTX ``call``), one entry per call site
    atomics: tuple[str, ...]  # atomic operations found (Triton IR, PTX)
    instructions_per_step: float | None  # SASS instructions of the innermost loop per pixel·step; None: no loop
    loop_instructions: int | None  # SASS instructions of one iteration of the innermost loop
    pixel_steps_per_iteration: float  # pixels each thread advances by one step in an iteration
    sass_subroutine_calls: int  # ptxas's slow paths (float64 division, square root), not a problem

    def problems(self) -> list[str]:
        """One line per problem: spills (local memory), out-of-line calls, atomics; empty when clean."""
        found = []
        if self.local_bytes:
            found.append(f"{self.local_bytes} bytes of local memory per thread (spills or a call's stack)")
        if self.calls:
            names = sorted(set(self.calls))
            found.append(f"{len(self.calls)} out-of-line call(s): {', '.join(names)}")
        if self.atomics:
            found.append(f"atomic operation(s): {', '.join(self.atomics)}")
        return found

    def to_dict(self) -> dict:
        """The report as JSON-ready values."""
        return {**{name: getattr(self, name) for name in self.__dataclass_fields__},
                "calls": list(self.calls), "atomics": list(self.atomics), "problems": self.problems()}


def kernel_report(fn, dtype: str, constants: dict, *, pointer_types: dict | None = None, num_warps: int = 4,
                  block: int | None = None, target=None) -> KernelReport:
    """Compile the ``triton.jit`` function ``fn`` for ``target`` (default: an H100's, :data:`DRY_TARGET`) and
    read its cost. ``dtype``: "float32" or "float64", the type of its pointers unless ``pointer_types`` says
    otherwise; ``block``: the elements each program owns (for the pixel·steps per iteration; default one a
    thread)."""
    from triton.backends.compiler import GPUTarget

    target = target or GPUTarget(*DRY_TARGET)
    compiled = compile_kernel(fn, POINTER_TYPES[dtype], constants, target, pointer_types=pointer_types,
                              options={"num_warps": num_warps})
    asm = compiled.asm
    registers, local_bytes = _resources(asm["cubin"])
    sass = _disassemble(asm["cubin"])
    loop = innermost_loop_instructions(sass)
    threads = num_warps * target.warp_size
    per_iteration = (block / threads) if block else 1.0
    return KernelReport(
        kernel=fn.__name__, dtype=dtype, target=f"{target.backend} sm_{target.arch}", registers=registers,
        local_bytes=local_bytes, calls=tuple(PTX_CALL.findall(asm["ptx"])),
        atomics=tuple(atomic_operations(asm)),
        instructions_per_step=(loop / per_iteration) if loop is not None else None, loop_instructions=loop,
        pixel_steps_per_iteration=per_iteration,
        sass_subroutine_calls=sum(1 for _, text in _instructions(sass) if re.match(r"^(?:@!?P\w+\s+)?CALL\b", text)))


def fused_kernel_report(dtype: str, target=None, variant: str = "common") -> KernelReport:
    """The fused whole-image kernel's report, in ``dtype`` ("float32" or "float64"), for ``target`` (default: an
    H100's, sm_90), in one of :data:`FUSED_VARIANTS` (default the common case's)."""
    from detsim.rendering import fused_kernel

    constants = {**FUSED_VARIANTS[variant], "F64": dtype == "float64", "BLOCK_P": fused_kernel.BLOCK_P}
    return kernel_report(fused_kernel.fused_image_kernel, dtype, constants,
                         pointer_types={"s_ptr": "i32", "f_ptr": "i32", "first_pos_ptr": "i32"}, num_warps=fused_kernel.NUM_WARPS,
                         block=fused_kernel.BLOCK_P, target=target)


def _tool(name: str) -> str:
    from triton import knobs

    return getattr(knobs.nvidia, name).path


def _resources(cubin: bytes) -> tuple[int, int]:
    """(registers per thread, stack + local bytes per thread) of the cubin's one kernel."""
    text = _run_on_cubin(cubin, [_tool("cuobjdump"), "--dump-resource-usage"])
    match = RESOURCES.search(text)
    if match is None:
        raise RuntimeError(f"cuobjdump printed no resource usage: {text.strip()[:200]}")
    registers, stack, _, local = (int(v) for v in match.groups())
    return registers, stack + local


def _disassemble(cubin: bytes) -> str:
    return _run_on_cubin(cubin, [_tool("cuobjdump"), "-sass"])


def _run_on_cubin(cubin: bytes, argv: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="detsim-kernel-") as scratch:
        path = Path(scratch) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([*argv, str(path)], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction text) of every SASS instruction, NOPs left out."""
    found = []
    for match in SASS_LINE.finditer(sass):
        text = match.group(2).strip()
        if text and not text.startswith("NOP"):
            found.append((int(match.group(1), 16), text))
    return found


def innermost_loop_instructions(sass: str) -> int | None:
    """Instructions of the innermost loop's body (from its head to its backward branch, inclusive): of the
    loops (backward branches), one that holds no other; of several such, the longest. None without a loop."""
    instructions = _instructions(sass)
    loops = []
    for address, text in instructions:
        branch = SASS_BRANCH.match(text)
        if branch and branch.group(1) is not None and int(branch.group(1), 16) < address:
            loops.append((int(branch.group(1), 16), address))
    innermost = [(head, tail) for head, tail in loops
                 if not any((h, t) != (head, tail) and head <= h and t <= tail for h, t in loops)]
    if not innermost:
        return None
    return max(sum(1 for address, _ in instructions if head <= address <= tail) for head, tail in innermost)


__all__ = ["FUSED_VARIANTS", "KernelReport", "fused_kernel_report", "innermost_loop_instructions", "kernel_report"]
