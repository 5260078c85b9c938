"""Recording Triton kernel launches: one event per launch, its tensor arguments hashed before and after.

For each launch: the kernel's name, grid, argument names, tensor arguments hashed before and after the
launch (``written`` says whether the launch changed them), scalar and ``constexpr`` arguments, and the
launch configuration. Where the launches are seen:

* under ``TRITON_INTERPRET=1`` (CPU), ``triton.runtime.interpreter.GridExecutor.__call__`` is wrapped
  (:func:`interpreter_launch`), because launch hooks do not fire in the interpreter;
* on GPU, ``JITFunction.run`` (user kernels, :func:`jit_launch`) and Inductor's ``CachingAutotuner.run``
  (compiled kernels, :func:`inductor_launch`) are wrapped, autotuning benchmark launches are left out,
  and ``triton.knobs.runtime.launch_enter_hook`` reports any other launch by name.

Kernel arguments named ``out*``/``output*`` (Inductor's ``out_ptrN``, :data:`WRITE_ONLY_KERNEL_ARG`) are
hashed before the launch but not compared: their content is about to be written. Never-written elements
(memory an empty-like op allocated, still holding the run's fill) are noted with their count.

:func:`install` puts the wrappers in place for one recorder and registers their removal with it; the
wrappers are process-wide, which is why only one recorder may be active at a time.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
from typing import Any, Callable

import torch

from detsim.track.divergence.events import argument_tensors, call_site, scalar_text

WRITE_ONLY_KERNEL_ARG = re.compile(r"^(out|output)(_|\d|$)", re.IGNORECASE)


def install(recorder) -> None:
    """Wrap Triton's launch paths so that they report to ``recorder`` (no-op without Triton).

    Every change is undone through ``recorder.on_exit``.
    """
    try:
        from triton import knobs
    except ImportError:
        return
    if knobs.runtime.interpret:
        from triton.runtime import interpreter
        _wrap(recorder, interpreter.GridExecutor, "__call__", interpreter_launch)
        return
    from triton.runtime import autotuner, jit
    _wrap(recorder, jit.JITFunction, "run", jit_launch)
    _wrap(recorder, autotuner.Autotuner, "_bench", _benchmark)
    if torch.cuda.is_available() or "torch._inductor.runtime.triton_heuristics" in sys.modules:
        # Inductor emits Triton only for GPUs; importing it costs seconds, so only then.
        from torch._inductor.runtime import triton_heuristics
        _wrap(recorder, triton_heuristics.CachingAutotuner, "run", inductor_launch)
    if torch.cuda.is_available():
        def hook(metadata) -> None:
            _launch_hook(recorder, metadata)

        knobs.runtime.launch_enter_hook.add(hook)
        recorder.on_exit(lambda: knobs.runtime.launch_enter_hook.remove(hook))


def _wrap(recorder, cls, attr: str, wrapper) -> None:
    """Replace ``cls.attr`` by a function calling ``wrapper(recorder, original, instance, ...)``."""
    original = cls.__dict__[attr]

    def patched(instance, *args, **kwargs):
        if recorder.is_paused:
            return original(instance, *args, **kwargs)
        return wrapper(recorder, original, instance, *args, **kwargs)

    patched.__wrapped__ = original
    setattr(cls, attr, patched)
    recorder.on_exit(lambda: setattr(cls, attr, original))


def record_launch(recorder, name: str, bound: dict, launch: Callable[[], Any], *, grid=None, config=None,
                  constexprs: tuple = ()):
    """Hash tensor arguments, launch, hash them again, add the event; returns what ``launch`` returned."""
    where = call_site()
    with recorder.paused():
        tensors = {n: t for n, v in bound.items() for n, t in argument_tensors(n, v)}
        scalars = {n: scalar_text(v) for n, v in bound.items() if not argument_tensors(n, v) and n not in constexprs}
        before = {}
        for n, t in tensors.items():
            unread = bool(WRITE_ONLY_KERNEL_ARG.match(n))
            before[n] = recorder.info(n, t, compare=not unread, note="write-only (by name)" if unread else None)
            if before[n].unwritten:
                before[n].note = recorder.never_written_note(t, before[n].unwritten)
        result = launch()
        if any(t.is_cuda for t in tensors.values()):
            torch.cuda.synchronize()
        after = []
        for n, t in tensors.items():
            info = recorder.info(n, t)
            info.written = info.hash != before[n].hash
            after.append(info)
    recorder.add(kind="kernel", name=name, where=where, inputs=list(before.values()), outputs=after,
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


def _resolve_grid(grid, bound: dict):
    if callable(grid):
        try:
            return grid(bound)
        except Exception as exc:
            return f"<grid callable failed: {exc}>"
    return grid


def interpreter_launch(recorder, original, executor, *args, **kwargs):
    """``GridExecutor.__call__`` under ``TRITON_INTERPRET=1``."""
    names = list(executor.arg_names)
    bound = dict(zip(names, args))
    spec = inspect.getfullargspec(executor.fn)
    accepted = set(spec.args) | set(spec.kwonlyargs)
    bound.update({k: v for k, v in kwargs.items() if k in accepted})
    extra = {k: scalar_text(v) for k, v in kwargs.items() if k not in accepted}
    constexprs = {n: scalar_text(bound[n]) for n in executor.constexprs if n in bound}
    grid = _resolve_grid(executor.grid, bound)
    return record_launch(recorder, executor.fn.__name__, bound, lambda: original(executor, *args, **kwargs),
                         grid=grid, config={**constexprs, **extra} or None, constexprs=tuple(constexprs))


def jit_launch(recorder, original, fn, *args, grid, warmup, **kwargs):
    """``JITFunction.run``: a user kernel launched on the GPU (warm-up compilations are not launches)."""
    if warmup:
        return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
    names = list(fn.arg_names)
    bound = dict(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    extra = {k: scalar_text(v) for k, v in kwargs.items() if k not in names}
    constexprs = {p.name: scalar_text(bound[p.name]) for p in fn.params if p.is_constexpr and p.name in bound}
    name = getattr(fn, "__name__", None) or fn.fn.__name__
    return record_launch(recorder, name, bound, lambda: original(fn, *args, grid=grid, warmup=warmup, **kwargs),
                         grid=_resolve_grid(grid, bound), config={**constexprs, **extra} or None,
                         constexprs=tuple(constexprs))


def inductor_launch(recorder, original, tuner, *args, stream, benchmark_run=False, **kwargs):
    """``CachingAutotuner.run``: an Inductor kernel, with the configuration autotuning chose."""
    if benchmark_run:
        return original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs)
    signature = tuner.triton_meta.get("signature", {})
    configured = set(tuner.configs[0].kwargs) if tuner.configs else set()
    names = [n for n in signature if n not in configured and signature.get(n) != "constexpr"]
    if len(names) < len(args):
        names += [f"arg{i}" for i in range(len(names), len(args))]
    bound = dict(zip(names, args))
    result = record_launch(recorder, tuner.fn.__name__, bound,
                           lambda: original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs))
    if len(getattr(tuner, "launchers", ())) == 1:  # the configuration is known once the tuner has chosen it
        event = recorder.record.events[-1]
        cfg = tuner.launchers[0].config
        event.config = {**{k: scalar_text(v) for k, v in cfg.kwargs.items()},
                        "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
        with contextlib.suppress(Exception):
            event.grid = grid_list(tuner._interpret_args_grid(args, cfg)[1])
    return result


def _benchmark(recorder, original, tuner, *args, **kwargs):
    """``Autotuner._bench``: benchmark launches are not part of the computation."""
    with recorder.paused():
        return original(tuner, *args, **kwargs)


def _launch_hook(recorder, metadata) -> None:
    if recorder.is_paused:
        return  # a launch already recorded by a wrapper, or an autotuning benchmark
    data = metadata.get() if hasattr(metadata, "get") else dict(metadata)
    recorder.add(kind="kernel", name=str(data.get("name")), where="launch hook (arguments not visible)",
                 inputs=[], outputs=[], scalars={}, grid=None, config=None)
