"""Record a computation event by event into a :class:`~detsim.track.compare.record.RunRecord`: aten ops
through a ``TorchDispatchMode`` (one event per op, its tensors hashed around it) and Triton launches
(:mod:`~detsim.track.compare.triton_hooks`).

Only one :class:`Recorder` may be active at a time: the Triton wrappers are process-wide. Recording ops
makes ``torch.compile`` fall back to eager inside the recorded region (a dispatch mode disables Dynamo);
record compiled code with ops off and kernels on."""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from typing import Callable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from detsim.track.compare import triton_hooks
from detsim.track.compare.record import Event, RunRecord, TensorInfo, argument_tensors, call_site, fill, \
    scalar_text, storage_key, tensor_info

EMPTY_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
OVERWRITE_OPS = {"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_",
                 "geometric_", "cauchy_", "log_normal_", "set_", "resize_", "resize_as_"}
METADATA_OPS = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "sym_size", "sym_stride",
                "sym_numel", "sym_storage_offset"}  # read only the shape/dtype/device of their tensor inputs


def op_mode(recorder) -> TorchDispatchMode:
    """A dispatch mode feeding ``recorder`` (enter it to record).

    Torch wraps a mode's ``__torch_dispatch__`` so that Dynamo never traces it, which imports Dynamo
    (seconds); here the wrapper is put in place only once Dynamo is loaded, so recording eager code costs
    no import and compiled code never traces the recorder.
    """

    class _OpMode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            _guard_against_dynamo(type(self))
            return record_op(recorder, func, args, kwargs or {})

    _guard_against_dynamo(_OpMode)
    return _OpMode()


def _guard_against_dynamo(cls) -> None:
    if "_dynamo_guarded" not in cls.__dict__ and "torch._dynamo" in sys.modules:
        cls._dynamo_guarded = True
        cls.__torch_dispatch__ = torch._disable_dynamo(cls.__dict__["__torch_dispatch__"], recursive=True)


def record_op(recorder, func, args: tuple, kwargs: dict):
    """Run one op and add its event to ``recorder`` (just run it while the recorder is paused)."""
    if recorder.is_paused:
        return func(*args, **kwargs)
    base = func._overloadpacket.__name__
    inputs, scalars = _op_inputs(recorder, func._schema, base, args, kwargs)
    where = call_site()
    node = torch._C._current_autograd_node()
    if node is not None:
        where = f"backward {node.name()}" + (f" (from {where})" if where else "")
    result = func(*args, **kwargs)
    outputs = []
    for tname, t in argument_tensors("out", result):
        if base in EMPTY_OPS:
            with recorder.paused():
                fill(t, recorder.fill)
            recorder.uninitialised[storage_key(t)] = f"#{len(recorder.record.events)} {func}" + \
                (f" at {where}" if where else "")
            outputs.append(recorder.info(tname, t, note="never written (empty)"))
        else:
            outputs.append(recorder.info(tname, t))
    if not outputs and result is not None and not isinstance(result, (torch.Tensor, list, tuple)):
        scalars["result"] = scalar_text(result)  # .item() and friends: the Python value it returned
    recorder.add(kind="op", name=str(func), where=where, inputs=inputs, outputs=outputs, scalars=scalars,
                 view=bool(func.is_view))
    return result


def _op_inputs(recorder, schema, base: str, args: tuple, kwargs: dict):
    """(tensor inputs hashed before the op, non-tensor arguments as text)."""
    inputs, scalars = [], {}
    for name, value, arg in _bind(schema, args, kwargs):
        tensors = argument_tensors(name, value)
        if not (arg is not None and arg.is_out):  # out= buffers are written, not read
            overwrite = bool(arg is not None and arg.is_write and base in OVERWRITE_OPS)
            inputs += [_input_info(recorder, base, tname, t, overwrite=overwrite) for tname, t in tensors]
        if not tensors and value is not None and not isinstance(value, torch.Tensor):
            scalars[name] = scalar_text(value)
    return inputs, scalars


def _input_info(recorder, base: str, name: str, t: torch.Tensor, *, overwrite: bool) -> TensorInfo:
    """A tensor input as read by the op: metadata only, overwritten, or hashed (never-written elements noted)."""
    if base in METADATA_OPS:
        return TensorInfo(name, None, list(t.shape), str(t.dtype).replace("torch.", ""), str(t.device),
                          compare=False, note="metadata only")
    info = recorder.info(name, t, compare=not overwrite, note="overwritten by the op" if overwrite else None)
    if info.unwritten and not overwrite:
        info.note = recorder.never_written_note(t, info.unwritten)
    return info


def _bind(schema, args: tuple, kwargs: dict):
    """(argument name, value, schema argument or None) for each positional and keyword argument."""
    arguments = list(schema.arguments)
    for i, value in enumerate(args):
        arg = arguments[i] if i < len(arguments) else None
        yield (arg.name if arg is not None else f"arg{i}"), value, arg
    by_name = {a.name: a for a in arguments}
    for name, value in kwargs.items():
        yield name, value, by_name.get(name)


class Recorder:
    """Context manager recording ops and/or Triton launches into :attr:`record`; the layers add events
    (:meth:`add`) and hash tensors (:meth:`info`)."""

    _active: "Recorder | None" = None
    _lock = threading.Lock()

    def __init__(self, label: str = "run", *, ops: bool = True, kernels: bool = True, fill: int = 0) -> None:
        self.record = RunRecord(label=label, threads=torch.get_num_threads(),
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
        """:func:`~detsim.track.compare.record.tensor_info` of ``t``, not recorded itself."""
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
           **kwargs) -> RunRecord:
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
