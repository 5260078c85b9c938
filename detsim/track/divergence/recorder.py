"""Record a computation event by event (aten ops and Triton launches, with tensor hashes).

Only one :class:`Recorder` may be active at a time: the Triton wrappers are process-wide. Recording ops
makes ``torch.compile`` fall back to eager inside the recorded region (a dispatch mode disables Dynamo);
record compiled code with ops off and kernels on."""

from __future__ import annotations

import contextlib
import threading
import traceback
from typing import Callable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from detsim.track.divergence import triton_hooks
from detsim.track.divergence.aten_ops import op_mode
from detsim.track.divergence.events import Event, Record, TensorInfo, storage_key, tensor_info


class Recorder:
    """Context manager recording ops and/or Triton launches into :attr:`record`; the layers add events
    (:meth:`add`) and hash tensors (:meth:`info`)."""

    _active: "Recorder | None" = None
    _lock = threading.Lock()

    def __init__(self, label: str = "run", *, ops: bool = True, kernels: bool = True, fill: int = 0) -> None:
        self.record = Record(label=label, threads=torch.get_num_threads(),
                             settings={"ops": ops, "kernels": kernels, "fill": fill,
                                       "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()})
        self.ops, self.kernels, self.fill = ops, kernels, fill
        self.uninitialised: dict[int, str] = {}  # storage data_ptr -> the empty-like op that allocated it
        self._paused = 0
        self._mode: TorchDispatchMode | None = None
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> "Recorder":
        with Recorder._lock:
            if Recorder._active is not None:
                raise RuntimeError("another Recorder is already active")
            Recorder._active = self
        try:
            if self.kernels:
                triton_hooks.install(self)
            if self.ops:
                self._mode = op_mode(self)
                self._mode.__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(*exc)
                self._mode = None
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()
            Recorder._active = None

    def on_exit(self, undo: Callable[[], None]) -> None:
        """Call ``undo`` when the recorder exits (the last registered first)."""
        self._undo.append(undo)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Ops run inside this block are not recorded (hashing, interpreter copies)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    @property
    def is_paused(self) -> bool:
        return self._paused > 0

    def info(self, name: str, t: torch.Tensor, **kw) -> TensorInfo:
        """:func:`~detsim.track.divergence.events.tensor_info` of ``t``, not recorded itself."""
        with self.paused():
            return tensor_info(name, t, run=self.fill, **kw)

    def never_written_note(self, t: torch.Tensor, count: int) -> str:
        """``N never-written element(s) (allocated by #k ...)``: where the tensor's fill came from."""
        origin = self.uninitialised.get(storage_key(t))
        return f"{count} never-written element(s) " + (f"(allocated by {origin})" if origin else
                                                        "(copied from memory an empty-like op allocated)")

    def add(self, **fields) -> Event:
        """Append the next event (its index is its position in the record)."""
        event = Event(index=len(self.record.events), **fields)
        self.record.events.append(event)
        return event


def record(fn: Callable, *args, label: str = "run", ops: bool = True, kernels: bool = True, fill: int = 0,
           **kwargs) -> Record:
    """Run ``fn(*args, **kwargs)`` once under a :class:`Recorder`; an exception is kept in ``record.error``.
    ``fill``: the run's value for never-written memory (give run A and run B different ones)."""
    recorder = Recorder(label, ops=ops, kernels=kernels, fill=fill)
    rec = recorder.record
    named = [*((f"arg{i}", a) for i, a in enumerate(args)), *kwargs.items()]
    rec.inputs = [tensor_info(n, t) for name, value in named for n, t in _flatten(name, value)]
    result = None
    try:
        with recorder:
            result = fn(*args, **kwargs)
    except Exception:
        rec.error = traceback.format_exc()
    rec.results = []
    for name, t in _flatten("result", result):
        info = tensor_info(name, t, run=fill)
        if info.unwritten:
            info.note = recorder.never_written_note(t, info.unwritten)
        rec.results.append(info)
    return rec


def _flatten(prefix: str, value) -> list[tuple[str, torch.Tensor]]:
    """Every tensor inside nested dicts, lists and tuples, named by its path (``result[0].image``)."""
    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in _flatten(f"{prefix}.{k}", v)]
    if isinstance(value, (list, tuple)):
        return [item for i, v in enumerate(value) for item in _flatten(f"{prefix}[{i}]", v)]
    return []
