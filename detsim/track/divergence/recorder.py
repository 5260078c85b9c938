"""Record a computation event by event: every aten op and every Triton kernel launch, with tensor hashes.

* **aten ops** through a ``TorchDispatchMode``: op name, where it was called from (file:line, or the
  autograd node in a backward pass), every tensor argument hashed before the op runs (named after the
  op's schema), non-tensor arguments as text, every tensor result hashed after it.
* **Triton kernels**: kernel name, grid, argument names, tensor arguments hashed before and after the
  launch, scalar and ``constexpr`` arguments, and the launch configuration. Under ``TRITON_INTERPRET=1``
  (CPU) ``triton.runtime.interpreter.GridExecutor.__call__`` is wrapped, because launch hooks do not fire
  in the interpreter; on GPU ``JITFunction.run`` (user kernels) and Inductor's ``CachingAutotuner.run``
  (compiled kernels) are wrapped, autotuning benchmark launches are left out, and
  ``triton.knobs.runtime.launch_enter_hook`` reports any other launch by name.

Memory that was never written is not compared: results of ``empty``-like ops (until something writes
them), the destination of ``copy_``/``fill_``-like ops and ``out=`` arguments, and kernel arguments named
``out*``/``output*`` (Inductor's ``out_ptrN``) before the launch. Their hashes are kept, marked
``compare=False``. Ops that read only their input's metadata (``empty_like``, ``zeros_like``...) do not
hash it.

Recording an op makes ``torch.compile`` fall back to eager inside the recorded region (a dispatch mode
disables Dynamo); record compiled code with ops off and kernels on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import threading
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

EMPTY_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
OVERWRITE_OPS = {"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_",
                 "geometric_", "cauchy_", "log_normal_", "set_", "resize_", "resize_as_"}
METADATA_OPS = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "sym_size", "sym_stride",
                "sym_numel", "sym_storage_offset"}  # read only the shape/dtype/device of their tensor inputs
WRITE_ONLY_KERNEL_ARG = re.compile(r"^(out|output)(_|\d|$)", re.IGNORECASE)
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
_TRACK_DIR = str(Path(__file__).resolve().parent)


@dataclass
class TensorInfo:
    """A tensor as recorded: its hash (None when it could not be read) and cheap statistics."""

    name: str
    hash: str | None
    shape: list[int]
    dtype: str
    device: str
    compare: bool = True  # False: content never written (uninitialised or write-only), not compared
    note: str | None = None
    stats: dict | None = None  # {"sum": float, "absmax": float} of the values, as float64
    written: bool = True  # kernel arguments: whether the launch changed the content

    def short(self) -> str:
        return (self.hash or "unhashed")[:12]


@dataclass
class Event:
    """One recorded op or kernel launch."""

    index: int
    kind: str  # "op" or "kernel"
    name: str  # "aten.add.Tensor", "planted.drift.default", or the kernel's name
    where: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    scalars: dict[str, str] = field(default_factory=dict)  # non-tensor arguments, as text
    grid: list | None = None
    config: dict | None = None  # kernel launch configuration (constexprs, num_warps, Inductor config)

    def describe(self) -> str:
        return f"#{self.index} {self.kind} {self.name}" + (f" at {self.where}" if self.where else "")


@dataclass
class Record:
    """Everything one run did, in order, plus the hashes of its inputs and results."""

    label: str
    events: list[Event] = field(default_factory=list)
    inputs: list[TensorInfo] = field(default_factory=list)
    results: list[TensorInfo] = field(default_factory=list)
    error: str | None = None
    threads: int = 0
    settings: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, allow_nan=False, default=str)

    @classmethod
    def from_dict(cls, data: dict) -> "Record":
        def infos(items):
            return [TensorInfo(**t) for t in items]

        events = [Event(**{**e, "inputs": infos(e["inputs"]), "outputs": infos(e["outputs"])}) for e in data["events"]]
        return cls(**{**data, "events": events, "inputs": infos(data["inputs"]), "results": infos(data["results"])})

    @classmethod
    def load(cls, path: Path) -> "Record":
        return cls.from_dict(json.loads(Path(path).read_text()))

    def counts(self) -> dict[str, int]:
        return {"op": sum(e.kind == "op" for e in self.events), "kernel": sum(e.kind == "kernel" for e in self.events)}


def tensor_info(name: str, t: torch.Tensor, *, stats: bool = True, compare: bool = True,
                note: str | None = None) -> TensorInfo:
    """Hash a tensor's values (sha256 of its contiguous bytes) without recording the ops that does."""
    shape, dtype, device = list(t.shape), str(t.dtype).replace("torch.", ""), str(t.device)
    if t.is_sparse or t.device.type == "meta" or type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        return TensorInfo(name, None, shape, dtype, device, compare=False, note=note or f"not hashed ({type(t).__name__})")
    try:
        data = t.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
        digest = hashlib.sha256(data.reshape(-1).view(torch.uint8).numpy()).hexdigest()
    except (RuntimeError, TypeError) as exc:
        return TensorInfo(name, None, shape, dtype, device, compare=False, note=f"not hashed ({exc})"[:200])
    summary = None
    if stats and data.numel() and (data.is_floating_point() or data.is_complex()):
        values = data.abs() if data.is_complex() else data
        values = values.to(torch.float64)
        summary = {"sum": _json_float(float(values.sum())), "absmax": _json_float(float(values.abs().max()))}
    return TensorInfo(name, digest, shape, dtype, device, compare=compare, note=note, stats=summary)


def _json_float(x: float):
    return x if x == x and abs(x) != float("inf") else str(x)


def scalar_text(value: Any) -> str:
    """Text for a non-tensor argument, stable between runs (no object addresses)."""
    if isinstance(value, torch.Generator):
        return f"Generator(initial_seed={value.initial_seed()})"
    text = repr(value)
    if " at 0x" in text or " object at " in text:
        return f"<{type(value).__name__}>"
    return text if len(text) <= 200 else text[:197] + "..."


def _storage_key(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def call_site() -> str:
    """The innermost caller outside torch, triton and the tracking suite: ``path:line in function``."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        skip = (filename.startswith((_TORCH_DIR, _TRACK_DIR)) or "/triton/" in filename
                or filename.endswith(("contextlib.py", "runpy.py")) or filename.startswith("<frozen"))
        if not skip:
            return f"{_short_path(filename)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return ""


def _short_path(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename


def _op_mode(recorder: "Recorder") -> TorchDispatchMode:
    """A dispatch mode feeding ``recorder``.

    Torch normally wraps a mode's ``__torch_dispatch__`` so that Dynamo never traces it, which imports
    Dynamo (seconds) on first use. Here the wrapper is put in place only once Dynamo is loaded (at once if
    it already is, else at the first op after it is imported): recording eager code costs no import, and
    compiled code never traces the recorder.
    """

    class _OpMode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            _guard_against_dynamo(type(self))
            return recorder._record_op(func, args, kwargs or {})

    _guard_against_dynamo(_OpMode)
    return _OpMode()


def _guard_against_dynamo(cls) -> None:
    if "_dynamo_guarded" not in cls.__dict__ and "torch._dynamo" in sys.modules:
        cls._dynamo_guarded = True
        cls.__torch_dispatch__ = torch._disable_dynamo(cls.__dict__["__torch_dispatch__"], recursive=True)


class Recorder:
    """Context manager recording ops and/or Triton launches into :attr:`record`.

    Only one recorder can be active at a time (the Triton wrappers are process-wide).
    """

    _active: "Recorder | None" = None
    _lock = threading.Lock()

    def __init__(self, label: str = "run", *, ops: bool = True, kernels: bool = True, stats: bool = True) -> None:
        self.record = Record(label=label, threads=torch.get_num_threads(),
                             settings={"ops": ops, "kernels": kernels,
                                       "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()})
        self.ops, self.kernels, self.stats = ops, kernels, stats
        self._paused = 0
        self._uninitialised: dict[int, str] = {}  # storage data_ptr -> the event that allocated it
        self._mode: TorchDispatchMode | None = None
        self._undo: list[Callable[[], None]] = []

    # ---- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> "Recorder":
        with Recorder._lock:
            if Recorder._active is not None:
                raise RuntimeError("another Recorder is already active")
            Recorder._active = self
        try:
            if self.kernels:
                self._install_triton()
            if self.ops:
                self._mode = _op_mode(self)
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

    @contextlib.contextmanager
    def paused(self):
        """Ops run inside this block are not recorded (hashing, interpreter copies)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def _info(self, name: str, t: torch.Tensor, **kw) -> TensorInfo:
        with self.paused():
            return tensor_info(name, t, stats=self.stats, **kw)

    def _add(self, **fields) -> None:
        self.record.events.append(Event(index=len(self.record.events), **fields))

    # ---- aten ops --------------------------------------------------------------------------------

    def _record_op(self, func, args: tuple, kwargs: dict):
        if self._paused:
            return func(*args, **kwargs)
        schema = func._schema
        base = func._overloadpacket.__name__
        inputs, scalars, written = [], {}, []
        for name, value, arg in _bind(schema, args, kwargs):
            is_out = bool(arg is not None and arg.is_out)
            is_write = bool(arg is not None and arg.is_write)
            for tname, t in _tensors(name, value):
                if is_write:
                    written.append(t)
                if is_out:
                    continue  # out= buffers are written, not read
                if base in METADATA_OPS:
                    inputs.append(TensorInfo(tname, None, list(t.shape), str(t.dtype).replace("torch.", ""),
                                             str(t.device), compare=False, note="metadata only"))
                    continue
                overwrite = is_write and base in OVERWRITE_OPS
                origin = self._uninitialised.get(_storage_key(t))
                note = ("overwritten by the op" if overwrite else
                        f"uninitialised memory (from {origin})" if origin else None)
                inputs.append(self._info(tname, t, compare=not (overwrite or origin), note=note))
            if not _tensors(name, value) and value is not None and not isinstance(value, torch.Tensor):
                scalars[name] = scalar_text(value)
        where = call_site()
        node = torch._C._current_autograd_node()
        if node is not None:
            where = f"backward {node.name()}" + (f" (from {where})" if where else "")
        result = func(*args, **kwargs)
        outputs = []
        for tname, t in _tensors("out", result):
            key = _storage_key(t)
            if base in EMPTY_OPS:
                self._uninitialised[key] = f"#{len(self.record.events)} {func}"
                outputs.append(self._info(tname, t, compare=False, note="uninitialised (empty)"))
            else:
                self._uninitialised.pop(key, None)
                outputs.append(self._info(tname, t))
        if not outputs and result is not None and not isinstance(result, (torch.Tensor, list, tuple)):
            scalars["result"] = scalar_text(result)  # .item() and friends: the Python value it returned
        for t in written:
            self._uninitialised.pop(_storage_key(t), None)
        self._add(kind="op", name=str(func), where=where, inputs=inputs, outputs=outputs, scalars=scalars)
        return result

    # ---- Triton ----------------------------------------------------------------------------------

    def _install_triton(self) -> None:
        try:
            from triton import knobs
        except ImportError:
            return
        if knobs.runtime.interpret:
            from triton.runtime import interpreter
            self._wrap(interpreter.GridExecutor, "__call__", _interpreter_launch)
            return
        from triton.runtime import autotuner, jit
        self._wrap(jit.JITFunction, "run", _jit_launch)
        self._wrap(autotuner.Autotuner, "_bench", _benchmark)
        if torch.cuda.is_available() or "torch._inductor.runtime.triton_heuristics" in sys.modules:
            # Inductor emits Triton only for GPUs; importing it costs seconds, so only then.
            from torch._inductor.runtime import triton_heuristics
            self._wrap(triton_heuristics.CachingAutotuner, "run", _inductor_launch)
        if torch.cuda.is_available():
            knobs.runtime.launch_enter_hook.add(_launch_hook)
            self._undo.append(lambda: knobs.runtime.launch_enter_hook.remove(_launch_hook))

    def _wrap(self, cls, attr: str, wrapper) -> None:
        original = cls.__dict__[attr]

        def patched(instance, *args, **kwargs):
            recorder = Recorder._active
            if recorder is None or recorder._paused:
                return original(instance, *args, **kwargs)
            return wrapper(recorder, original, instance, *args, **kwargs)

        patched.__wrapped__ = original
        setattr(cls, attr, patched)
        self._undo.append(lambda: setattr(cls, attr, original))

    def _record_launch(self, name: str, bound: dict, launch: Callable[[], Any], *, grid=None, config=None,
                       constexprs: tuple = (), write_only: Callable[[str], bool] = lambda n: bool(WRITE_ONLY_KERNEL_ARG.match(n))):
        """Hash tensor arguments, launch, hash them again, add the event."""
        where = call_site()
        with self.paused():
            tensors = {n: t for n, v in bound.items() for n, t in _tensors(n, v)}
            scalars = {n: scalar_text(v) for n, v in bound.items() if not _tensors(n, v) and n not in constexprs}
            before = {}
            for n, t in tensors.items():
                origin = self._uninitialised.get(_storage_key(t))
                unread = write_only(n)
                note = f"uninitialised memory (from {origin})" if origin else "write-only (by name)" if unread else None
                before[n] = self._info(n, t, compare=not (origin or unread), note=note)
            result = launch()
            if any(t.is_cuda for t in tensors.values()):
                torch.cuda.synchronize()
            after = []
            for n, t in tensors.items():
                info = self._info(n, t)
                info.written = info.hash != before[n].hash
                after.append(info)
                self._uninitialised.pop(_storage_key(t), None)
        self._add(kind="kernel", name=name, where=where, inputs=list(before.values()), outputs=after,
                  scalars=scalars, grid=_grid_list(grid), config=config)
        return result


def _tensors(name: str, value) -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, torch.Tensor) for v in value):
        return [(f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor)]
    return []


def _bind(schema, args: tuple, kwargs: dict):
    arguments = list(schema.arguments)
    for i, value in enumerate(args):
        arg = arguments[i] if i < len(arguments) else None
        yield (arg.name if arg is not None else f"arg{i}"), value, arg
    by_name = {a.name: a for a in arguments}
    for name, value in kwargs.items():
        yield name, value, by_name.get(name)


def _grid_list(grid) -> list | None:
    if grid is None:
        return None
    try:
        values = [int(g) for g in grid]
    except (TypeError, ValueError):
        return [str(grid)]
    return values + [1] * (3 - len(values))


def _resolve_grid(grid, bound: dict):
    if callable(grid):
        try:
            return grid(bound)
        except Exception as exc:
            return f"<grid callable failed: {exc}>"
    return grid


def _interpreter_launch(recorder: Recorder, original, executor, *args, **kwargs):
    import inspect

    names = list(executor.arg_names)
    bound = dict(zip(names, args))
    accepted = set(inspect.getfullargspec(executor.fn).args) | set(inspect.getfullargspec(executor.fn).kwonlyargs)
    bound.update({k: v for k, v in kwargs.items() if k in accepted})
    extra = {k: scalar_text(v) for k, v in kwargs.items() if k not in accepted}
    constexprs = {n: scalar_text(bound[n]) for n in executor.constexprs if n in bound}
    grid = _resolve_grid(executor.grid, bound)
    return recorder._record_launch(executor.fn.__name__, bound, lambda: original(executor, *args, **kwargs),
                                   grid=grid, config={**constexprs, **extra} or None, constexprs=tuple(constexprs))


def _jit_launch(recorder: Recorder, original, fn, *args, grid, warmup, **kwargs):
    if warmup:
        return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
    names = list(fn.arg_names)
    bound = dict(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    extra = {k: scalar_text(v) for k, v in kwargs.items() if k not in names}
    constexprs = {p.name: scalar_text(bound[p.name]) for p in fn.params if p.is_constexpr and p.name in bound}
    name = getattr(fn, "__name__", None) or fn.fn.__name__
    return recorder._record_launch(name, bound,
                                   lambda: original(fn, *args, grid=grid, warmup=warmup, **kwargs),
                                   grid=_resolve_grid(grid, bound), config={**constexprs, **extra} or None,
                                   constexprs=tuple(constexprs))


def _inductor_launch(recorder: Recorder, original, tuner, *args, stream, benchmark_run=False, **kwargs):
    if benchmark_run:
        return original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs)
    signature = list(tuner.triton_meta.get("signature", {}))
    configured = set(tuner.configs[0].kwargs) if tuner.configs else set()
    names = [n for n in signature if n not in configured and tuner.triton_meta.get("signature", {}).get(n) != "constexpr"]
    if len(names) < len(args):
        names += [f"arg{i}" for i in range(len(names), len(args))]
    bound = dict(zip(names, args))
    launched = {}

    def launch():
        launched["result"] = original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs)
        return launched["result"]

    result = recorder._record_launch(tuner.fn.__name__, bound, launch)
    event = recorder.record.events[-1]
    if len(getattr(tuner, "launchers", ())) == 1:
        cfg = tuner.launchers[0].config
        event.config = {**{k: scalar_text(v) for k, v in cfg.kwargs.items()},
                        "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
        with contextlib.suppress(Exception):
            event.grid = _grid_list(tuner._interpret_args_grid(args, cfg)[1])
    return result


def _benchmark(recorder: Recorder, original, tuner, *args, **kwargs):
    with recorder.paused():
        return original(tuner, *args, **kwargs)


def _launch_hook(metadata) -> None:
    recorder = Recorder._active
    if recorder is None or recorder._paused:
        return  # no recorder, a launch already recorded by a wrapper, or an autotuning benchmark
    data = metadata.get() if hasattr(metadata, "get") else dict(metadata)
    recorder._add(kind="kernel", name=str(data.get("name")), where="launch hook (arguments not visible)",
                  inputs=[], outputs=[], scalars={}, grid=None, config=None)


def record(fn: Callable, *args, label: str = "run", ops: bool = True, kernels: bool = True, **kwargs) -> Record:
    """Run ``fn(*args, **kwargs)`` once under a :class:`Recorder`; an exception is kept in ``record.error``."""
    recorder = Recorder(label, ops=ops, kernels=kernels)
    rec = recorder.record
    named = [*((f"arg{i}", a) for i, a in enumerate(args)), *kwargs.items()]
    rec.inputs = [tensor_info(n, t) for name, value in named for n, t in _flatten(name, value)]
    result = None
    try:
        with recorder:
            result = fn(*args, **kwargs)
    except Exception:
        rec.error = traceback.format_exc()
    rec.results = [tensor_info(n, t) for n, t in _flatten("result", result)]
    return rec


def _flatten(prefix: str, value) -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in _flatten(f"{prefix}.{k}", v)]
    if isinstance(value, (list, tuple)):
        return [item for i, v in enumerate(value) for item in _flatten(f"{prefix}[{i}]", v)]
    return []
