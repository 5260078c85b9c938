"""Trace a computation event by event into a :class:`~detsim.track.compare.run_log.RunLog`: aten ops
through a ``TorchDispatchMode`` (one event per op, its tensors hashed around it) and Triton launches, by
wrapping Triton's launch paths (docs/determinism.md).

Only one :class:`Tracer` may be active at a time: the Triton wrappers are process-wide. Tracing ops
makes ``torch.compile`` fall back to eager inside the traced region (a dispatch mode disables Dynamo);
trace compiled code with ops off and kernels on.

Launch hooks do not fire under ``TRITON_INTERPRET=1``, so the interpreter's ``GridExecutor.__call__`` is
wrapped; on GPU ``JITFunction.run`` (user kernels) and Inductor's ``CachingAutotuner.run``. Arguments
named ``out*``/``output*`` (Inductor's ``out_ptrN``) are hashed before the launch but not compared: their
content is about to be written."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import sys
import threading
import traceback
from typing import Any, Callable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from detsim.track.base.status import Status
from detsim.track.compare.run_log import Event, RunLog, TensorInfo, call_site, fill, named_tensors, \
    scalar_text, storage_key, tensor_info

EMPTY_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
OVERWRITE_OPS = {"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_",
                 "geometric_", "cauchy_", "log_normal_", "set_", "resize_", "resize_as_"}
METADATA_OPS = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "sym_size", "sym_stride",
                "sym_numel", "sym_storage_offset"}  # read only the shape/dtype/device of their tensor inputs
WRITE_ONLY_KERNEL_ARG = re.compile(r"^(out|output)(_|\d|$)", re.IGNORECASE)


def op_mode(tracer) -> TorchDispatchMode:
    """A dispatch mode feeding ``tracer`` (enter it to trace).

    Torch wraps a mode's ``__torch_dispatch__`` so that Dynamo never traces it, which imports Dynamo
    (seconds); here the wrapper is put in place only once Dynamo is loaded, so recording eager code costs
    no import and compiled code never traces the tracer.
    """

    class _OpMode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            _guard_against_dynamo(type(self))
            return trace_op(tracer, func, args, kwargs or {})

    _guard_against_dynamo(_OpMode)
    return _OpMode()


def _guard_against_dynamo(cls) -> None:
    if "_dynamo_guarded" not in cls.__dict__ and "torch._dynamo" in sys.modules:
        cls._dynamo_guarded = True
        cls.__torch_dispatch__ = torch._disable_dynamo(cls.__dict__["__torch_dispatch__"], recursive=True)


def trace_op(tracer, func, args: tuple, kwargs: dict):
    """Run one op and add its event to ``tracer`` (just run it while the tracer is paused)."""
    if tracer.is_paused:
        return func(*args, **kwargs)
    base = func._overloadpacket.__name__
    inputs, scalars = _op_inputs(tracer, func._schema, base, args, kwargs)
    where = call_site()
    node = torch._C._current_autograd_node()
    if node is not None:
        where = f"backward {node.name()}" + (f" (from {where})" if where else "")
    result = func(*args, **kwargs)
    outputs = []
    for tname, t in named_tensors("out", result):
        if base in EMPTY_OPS:
            with tracer.paused():
                fill(t, tracer.fill)
            tracer.uninitialised[storage_key(t)] = f"#{len(tracer.log.events)} {func}" + \
                (f" at {where}" if where else "")
            outputs.append(tracer.info(tname, t, note="never written (empty)"))
        else:
            outputs.append(tracer.info(tname, t))
    if not outputs and result is not None and not isinstance(result, (torch.Tensor, list, tuple)):
        scalars["result"] = scalar_text(result)  # .item() and friends: the Python value it returned
    tracer.add(kind="op", name=str(func), where=where, inputs=inputs, outputs=outputs, scalars=scalars,
                 view=bool(func.is_view))
    return result


def _op_inputs(tracer, schema, base: str, args: tuple, kwargs: dict):
    """(tensor inputs hashed before the op, non-tensor arguments as text)."""
    inputs, scalars = [], {}
    for name, value, arg in _bind(schema, args, kwargs):
        tensors = named_tensors(name, value)
        if not (arg is not None and arg.is_out):  # out= buffers are written, not read
            overwrite = bool(arg is not None and arg.is_write and base in OVERWRITE_OPS)
            inputs += [_input_info(tracer, base, tname, t, overwrite=overwrite) for tname, t in tensors]
        if not tensors and value is not None and not isinstance(value, torch.Tensor):
            scalars[name] = scalar_text(value)
    return inputs, scalars


def _input_info(tracer, base: str, name: str, t: torch.Tensor, *, overwrite: bool) -> TensorInfo:
    """A tensor input as read by the op: metadata only, overwritten, or hashed (never-written elements noted)."""
    if base in METADATA_OPS:
        return TensorInfo(name, None, list(t.shape), str(t.dtype).replace("torch.", ""), str(t.device),
                          compare=False, note="metadata only")
    if overwrite:
        return tracer.info(name, t, compare=False, note="overwritten by the op")
    return tracer.read(name, t)


def _bind(schema, args: tuple, kwargs: dict):
    """(argument name, value, schema argument or None) for each positional and keyword argument."""
    arguments = list(schema.arguments)
    for i, value in enumerate(args):
        arg = arguments[i] if i < len(arguments) else None
        yield (arg.name if arg is not None else f"arg{i}"), value, arg
    by_name = {a.name: a for a in arguments}
    for name, value in kwargs.items():
        yield name, value, by_name.get(name)


class Tracer:
    """Context manager recording ops and/or Triton launches into :attr:`log`; the layers add events
    (:meth:`add`) and hash tensors (:meth:`info`)."""

    _active: "Tracer | None" = None
    _lock = threading.Lock()

    def __init__(self, label: str = "run", *, ops: bool = True, kernels: bool = True, fill: int = 0) -> None:
        self.log = RunLog(label=label, threads=torch.get_num_threads(),
                             settings={"ops": ops, "kernels": kernels, "fill": fill,
                                       "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()})
        self.ops, self.kernels, self.fill = ops, kernels, fill
        self.uninitialised: dict[int, str] = {}  # storage data_ptr -> the empty-like op that allocated it
        self._paused = 0
        self._mode: TorchDispatchMode | None = None
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> "Tracer":
        with Tracer._lock:
            if Tracer._active is not None:
                raise RuntimeError("another Tracer is already active")
            Tracer._active = self
        try:
            if self.kernels:
                install(self)
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
            Tracer._active = None

    def on_exit(self, undo: Callable[[], None]) -> None:
        """Call ``undo`` when the tracer exits (the last registered first)."""
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
        """:func:`~detsim.track.compare.run_log.tensor_info` of ``t``, not recorded itself."""
        with self.paused():
            return tensor_info(name, t, run=self.fill, **kw)

    def read(self, name: str, t: torch.Tensor, **kw) -> TensorInfo:
        """:meth:`info` of a tensor that is read: its never-written elements are noted
        (``N never-written element(s) (allocated by #k ...)``: where the tensor's fill came from)."""
        info = self.info(name, t, **kw)
        if info.unwritten:
            origin = self.uninitialised.get(storage_key(t))
            info.note = f"{info.unwritten} never-written element(s) " + (
                f"(allocated by {origin})" if origin else "(copied from memory an empty-like op allocated)")
        return info

    def add(self, **fields) -> Event:
        """Append the next event (its index is its position in the log)."""
        event = Event(index=len(self.log.events), **fields)
        self.log.events.append(event)
        return event


def trace(fn: Callable, *args, label: str = "run", ops: bool = True, kernels: bool = True, fill: int = 0,
          **kwargs) -> RunLog:
    """Run ``fn(*args, **kwargs)`` once under a :class:`Tracer`; an exception is kept in the log's ``error``.
    ``fill``: the run's value for never-written memory (give run A and run B different ones)."""
    tracer = Tracer(label, ops=ops, kernels=kernels, fill=fill)
    log = tracer.log
    named = [*((f"arg{i}", a) for i, a in enumerate(args)), *kwargs.items()]
    log.inputs = [tensor_info(n, t) for name, value in named for n, t in named_tensors(name, value)]
    result = None
    try:
        with tracer:
            result = fn(*args, **kwargs)
    except Exception:
        log.error, log.status = traceback.format_exc(), Status.CRASHED
    log.results = [tracer.read(name, t) for name, t in named_tensors("result", result)]
    return log


# -- Triton launches ------------------------------------------------------------------------------------


def install(tracer) -> None:
    """Wrap Triton's launch paths so that they report to ``tracer`` until it exits (no-op without Triton)."""
    try:
        from triton import knobs
    except ImportError:
        return
    if knobs.runtime.interpret:
        from triton.runtime import interpreter
        _wrap(tracer, interpreter.GridExecutor, "__call__", interpreter_launch)
        return
    from triton.runtime import autotuner, jit
    _wrap(tracer, jit.JITFunction, "run", jit_launch)
    _wrap(tracer, autotuner.Autotuner, "_bench", _benchmark)
    if torch.cuda.is_available() or "torch._inductor.runtime.triton_heuristics" in sys.modules:
        # Inductor emits Triton only for GPUs; importing it costs seconds, so only then.
        from torch._inductor.runtime import triton_heuristics
        _wrap(tracer, triton_heuristics.CachingAutotuner, "run", inductor_launch)
    if torch.cuda.is_available():
        hook = functools.partial(_launch_hook, tracer)
        knobs.runtime.launch_enter_hook.add(hook)
        tracer.on_exit(lambda: knobs.runtime.launch_enter_hook.remove(hook))


def _wrap(tracer, cls, attr: str, wrapper) -> None:
    """Replace ``cls.attr`` by a function calling ``wrapper(tracer, original, instance, ...)``."""
    original = cls.__dict__[attr]

    def patched(instance, *args, **kwargs):
        if tracer.is_paused:
            return original(instance, *args, **kwargs)
        return wrapper(tracer, original, instance, *args, **kwargs)

    patched.__wrapped__ = original
    setattr(cls, attr, patched)
    tracer.on_exit(lambda: setattr(cls, attr, original))


def trace_launch(tracer, name: str, bound: dict, launch: Callable[[], Any], *, grid=None, config=None,
                  constexprs: tuple = ()):
    """Hash tensor arguments, launch, hash them again, add the event; returns what ``launch`` returned."""
    where = call_site()
    with tracer.paused():
        tensors = {n: t for n, v in bound.items() for n, t in named_tensors(n, v)}
        scalars = {n: scalar_text(v) for n, v in bound.items() if not named_tensors(n, v) and n not in constexprs}
        before = {}
        for n, t in tensors.items():
            unread = bool(WRITE_ONLY_KERNEL_ARG.match(n))
            before[n] = tracer.read(n, t, compare=not unread, note="write-only (by name)" if unread else None)
        result = launch()
        if any(t.is_cuda for t in tensors.values()):
            torch.cuda.synchronize()
        after = []
        for n, t in tensors.items():
            info = tracer.info(n, t)
            info.written = info.hash != before[n].hash
            after.append(info)
    tracer.add(kind="kernel", name=name, where=where, inputs=list(before.values()), outputs=after,
                 scalars=scalars, grid=grid_list(grid), config=config)
    return result


def grid_list(grid) -> list | None:
    """A launch grid as three integers (missing dimensions are 1), or its text when it is not numeric."""
    if grid is None:
        return None
    try:
        values = [int(g) for g in grid]
    except (TypeError, ValueError):
        return [str(grid)]
    return values + [1] * (3 - len(values))


def _user_kernel(tracer, name: str, names, accepted, constexpr_names, grid, args, kwargs, launch):
    """Record the launch of a user kernel: arguments bound by name, ``constexpr`` and unknown keyword
    arguments as its configuration, a callable grid resolved against the arguments."""
    bound = dict(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in accepted})
    extra = {k: scalar_text(v) for k, v in kwargs.items() if k not in accepted}
    constexprs = {n: scalar_text(bound[n]) for n in constexpr_names if n in bound}
    if callable(grid):
        try:
            grid = grid(bound)
        except Exception as exc:
            grid = f"<grid callable failed: {exc}>"
    return trace_launch(tracer, name, bound, launch, grid=grid, config={**constexprs, **extra} or None,
                         constexprs=tuple(constexprs))


def interpreter_launch(tracer, original, executor, *args, **kwargs):
    """``GridExecutor.__call__`` under ``TRITON_INTERPRET=1``."""
    spec = inspect.getfullargspec(executor.fn)
    return _user_kernel(tracer, executor.fn.__name__, executor.arg_names, {*spec.args, *spec.kwonlyargs},
                        executor.constexprs, executor.grid, args, kwargs,
                        lambda: original(executor, *args, **kwargs))


def jit_launch(tracer, original, fn, *args, grid, warmup, **kwargs):
    """``JITFunction.run``: a user kernel launched on the GPU (warm-up compilations are not launches)."""
    def launch():
        return original(fn, *args, grid=grid, warmup=warmup, **kwargs)

    if warmup:
        return launch()
    return _user_kernel(tracer, getattr(fn, "__name__", None) or fn.fn.__name__, fn.arg_names, set(fn.arg_names),
                        [p.name for p in fn.params if p.is_constexpr], grid, args, kwargs, launch)


def inductor_launch(tracer, original, tuner, *args, stream, benchmark_run=False, **kwargs):
    """``CachingAutotuner.run``: an Inductor kernel, with the configuration autotuning chose."""
    if benchmark_run:
        return original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs)
    signature = tuner.triton_meta.get("signature", {})
    configured = set(tuner.configs[0].kwargs) if tuner.configs else set()
    names = [n for n in signature if n not in configured and signature.get(n) != "constexpr"]
    names += [f"arg{i}" for i in range(len(names), len(args))]
    bound = dict(zip(names, args))
    result = trace_launch(tracer, tuner.fn.__name__, bound,
                           lambda: original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs))
    if len(getattr(tuner, "launchers", ())) == 1:  # the configuration is known once the tuner has chosen it
        event = tracer.log.events[-1]
        cfg = tuner.launchers[0].config
        event.config = {**{k: scalar_text(v) for k, v in cfg.kwargs.items()},
                        "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
        with contextlib.suppress(Exception):
            event.grid = grid_list(tuner._interpret_args_grid(args, cfg)[1])
    return result


def _benchmark(tracer, original, tuner, *args, **kwargs):
    """``Autotuner._bench``: benchmark launches are not part of the computation."""
    with tracer.paused():
        return original(tuner, *args, **kwargs)


def _launch_hook(tracer, metadata) -> None:
    if tracer.is_paused:
        return  # a launch already recorded by a wrapper, or an autotuning benchmark
    data = metadata.get() if hasattr(metadata, "get") else dict(metadata)
    tracer.add(kind="kernel", name=str(data.get("name")), where="launch hook (arguments not visible)",
                 inputs=[], outputs=[], scalars={}, grid=None, config=None)
