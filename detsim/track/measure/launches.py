"""Device operations of a render, counted on the CPU: what a GPU would be asked to launch, copy and wait for.

A render on a GPU costs, besides its arithmetic, one launch per kernel, one transfer per host-device copy
and one stall per host sync; their numbers do not depend on the device, so they are counted here, on the
CPU, under a :class:`~torch.utils._python_dispatch.TorchDispatchMode` and a wrapper of Triton's interpreter.
The one rule of what counts (:func:`launches_a_kernel`):

* an aten op dispatched on a tensor is one *kernel*, except an op that only makes a new view of its input
  (its schema returns an alias it does not write: ``view``, ``expand``, ``slice``, ``detach``...) or only
  allocates (``empty``...), which launch nothing; an op may launch more than one kernel on a GPU, so
  this is a lower bound of the launches of eager PyTorch;
* a copy between two devices (``aten._to_copy``/``aten.copy_`` with tensors on two devices) is a *copy*, not
  a kernel (a copy within one device is a kernel);
* ``aten._local_scalar_dense`` (``.item()``, ``bool()``, ``int()`` of a tensor) is a *sync*, not a kernel;
* a Triton kernel called (``kernel[grid](...)``, run by ``triton.runtime.interpreter.GridExecutor`` under
  ``TRITON_INTERPRET=1``) is one *Triton launch*; the aten ops the interpreter itself runs to stage its
  arguments are not counted;
* a call of a ``torch.compile``d graph is one *compiled call*: on a CPU inductor generates C++, which the
  dispatcher never sees, so a graph's launches on a GPU are counted as one per call (inductor emits at
  least one Triton kernel per graph; a graph it splits would launch more), and the aten ops it falls back
  to (outside the graph) are counted as kernels as above. Only graphs compiled before the region are seen
  (a region is counted after a warm-up run), and only kernels of a Triton already imported.

``launches`` (:attr:`OpCounts.launches`) is kernels + Triton launches + compiled calls. The counts can
be limited to ops on tensors of one device type (``device=``): a setup moved to ``meta`` counts what it
would ask of the target device, apart from the CPU work before.

Counts only (:func:`triton_bodies_skipped`, ``count_render(..., run_triton=False)``): a Triton kernel called
under the interpreter is counted and not run, its outputs left as allocated. The rule: the counts are the same
as when it runs wherever nothing after the launch decides what to do from the kernel's output - no read of it
to the host (``.item()``, ``bool()``), no data-dependent shape (``nonzero``, masked selection), no Python branch
on its values - since the dispatcher then sees the same ops whatever the values are. detsim's render meets it:
a kernel's output (the fused image, a chunk's lane sums) is only added, scaled and stored
(``tests/track/measure/test_measure_launches.py`` holds the counts equal on each path). A caller that reads a
kernel's output for control flow must run it.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

SYNC_OPS = frozenset({"aten::_local_scalar_dense"})
COPY_OPS = frozenset({"aten::_to_copy", "aten::copy_"})
VIEW_LIKE_OPS = frozenset({"aten::_unsafe_view", "aten::lift_fresh"})  # views whose schema does not say so
ALLOCATING_OPS = frozenset({"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
                            "aten::new_empty_strided", "aten::resize_"})
# metadata queries that reach the dispatcher but read no data
METADATA_OPS = frozenset({"aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset",
                          "aten::is_contiguous", "aten::is_same_size"})


def _returns_alias(func) -> bool:
    """Whether ``func`` returns a view of an input it does not write (a view, no data moved)."""
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def launches_a_kernel(func) -> bool:
    """The one rule: does ``func`` (an aten overload) launch a kernel on a GPU? (See the module's docstring.)"""
    name = func._schema.name
    return not (name in SYNC_OPS or name in ALLOCATING_OPS or name in METADATA_OPS
                or name in VIEW_LIKE_OPS or _returns_alias(func))


@dataclass
class OpCounts:
    """What one counted region asked of the device."""

    kernels: int = 0  # aten ops that launch a kernel (launches_a_kernel)
    copies: int = 0  # copies between two devices
    syncs: int = 0  # host syncs (aten._local_scalar_dense)
    triton_launches: int = 0  # Triton kernels called
    compiled_calls: int = 0  # torch.compile'd graphs called
    by_op: dict[str, int] = field(default_factory=dict)  # kernel op name -> count

    @property
    def launches(self) -> int:
        """Kernels a GPU would launch: aten kernels, Triton kernels and one per compiled graph call."""
        return self.kernels + self.triton_launches + self.compiled_calls


class _Dispatched(TorchDispatchMode):
    """Sorts every aten op dispatched into kernel, copy, sync or nothing, for ops touching ``device``."""

    def __init__(self, counts: OpCounts, device: str | None, paused: Callable[[], bool]):
        super().__init__()
        self.counts, self.device, self.paused = counts, device, paused

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """torch.compile'd code runs compiled under this mode (other modes make it run eagerly, op by op)."""
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.paused():
            self._count(func, args, kwargs, out)
        return out

    def _count(self, func, args, kwargs, out) -> None:
        tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
        devices = {t.device.type for t in tensors}
        if self.device is not None and self.device not in devices:
            return
        name = func._schema.name
        if name in SYNC_OPS:
            self.counts.syncs += 1
        elif name in COPY_OPS and len(devices) > 1:
            self.counts.copies += 1
        elif launches_a_kernel(func):
            self._kernel(name)

    def _kernel(self, name: str) -> None:
        self.counts.kernels += 1
        self.counts.by_op[name] = self.counts.by_op.get(name, 0) + 1


_LOCAL = threading.local()


def _in_untracked() -> bool:
    return getattr(_LOCAL, "untracked", 0) > 0


@contextlib.contextmanager
def _untracked() -> Iterator[None]:
    _LOCAL.untracked = getattr(_LOCAL, "untracked", 0) + 1
    try:
        yield
    finally:
        _LOCAL.untracked -= 1


@contextlib.contextmanager
def triton_launches(counts: OpCounts) -> Iterator[None]:
    """Count Triton kernels run by the interpreter (TRITON_INTERPRET=1), not the ops it stages them with."""
    interpreter = sys.modules.get("triton.runtime.interpreter")  # imported by a kernel defined interpreted
    if interpreter is None:
        yield
        return
    original = interpreter.GridExecutor.__call__

    def counted(self, *args, **kwargs):
        if not _in_untracked():
            counts.triton_launches += 1
        with _untracked():
            return original(self, *args, **kwargs)

    interpreter.GridExecutor.__call__ = counted
    try:
        yield
    finally:
        interpreter.GridExecutor.__call__ = original


@contextlib.contextmanager
def triton_bodies_skipped() -> Iterator[None]:
    """Within the block, a Triton kernel called under the interpreter (``TRITON_INTERPRET=1``) is not run: its
    outputs keep what they held. For counting only, where the rule of the module's docstring holds."""
    try:  # imported here: a kernel module imported inside the block (a lazy import) runs through it
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:  # no Triton: no kernel to skip
        yield
        return
    original = interpreter.GridExecutor.__call__

    def skipped(self, *args, **kwargs):
        return None

    interpreter.GridExecutor.__call__ = skipped
    try:
        yield
    finally:
        interpreter.GridExecutor.__call__ = original


@contextlib.contextmanager
def _compiled_calls(counts: OpCounts) -> Iterator[None]:
    """Count calls of torch.compile'd graphs (each stands for at least one GPU kernel), not the ops inside."""
    output_code = sys.modules.get("torch._inductor.output_code")  # none: nothing compiled yet (warm up first)
    if output_code is None:
        yield
        return
    graph_call = output_code.CompiledFxGraph.__call__

    def counted(self, *args, **kwargs):
        if not _in_untracked():
            counts.compiled_calls += 1
        with _untracked():
            return graph_call(self, *args, **kwargs)

    output_code.CompiledFxGraph.__call__ = counted
    try:
        yield
    finally:
        output_code.CompiledFxGraph.__call__ = graph_call


@contextlib.contextmanager
def counting(device: str | None = None) -> Iterator[OpCounts]:
    """Count, within the block, the device operations of everything run in this thread (see the module's
    docstring); ``device``: only ops with a tensor on that device type (``"cpu"``, ``"meta"``)."""
    counts = OpCounts()
    with triton_launches(counts), _compiled_calls(counts), _Dispatched(counts, device, _in_untracked):
        yield counts


def count_render(prepare: Callable, render: Callable, config, mode: str, dtype: torch.dtype,
                 run_triton: bool = True) -> dict:
    """The device operations of one render of ``config`` on path ``mode`` on the CPU (``prepare`` and ``render``:
    the detsim being measured, passed in so that this module imports none): a warm-up render (compilation, lazy
    imports), then one counted, the setup prepared before. A JSON-ready record: launches, copies, syncs, their
    parts and the kernels per op. ``run_triton=False``: Triton kernels under the interpreter are counted, not
    run (:func:`triton_bodies_skipped`; the image is then not the render's)."""
    setup = prepare(config, device="cpu", dtype=dtype)
    with contextlib.nullcontext() if run_triton else triton_bodies_skipped():
        render(setup, mode=mode)
        with counting() as counts:
            render(setup, mode=mode)
    return {"launches": counts.launches, "copies": counts.copies, "syncs": counts.syncs, "kernels": counts.kernels,
            "triton_launches": counts.triton_launches, "compiled_calls": counts.compiled_calls,
            "by_op": dict(sorted(counts.by_op.items()))}


__all__ = ["OpCounts", "count_render", "counting", "launches_a_kernel", "triton_bodies_skipped", "triton_launches"]
