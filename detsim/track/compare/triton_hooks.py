"""Recording Triton kernel launches by wrapping Triton's launch paths (docs/determinism.md).

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
from typing import Any, Callable

import torch

from detsim.track.compare.record import argument_tensors, call_site, scalar_text

WRITE_ONLY_KERNEL_ARG = re.compile(r"^(out|output)(_|\d|$)", re.IGNORECASE)


def install(recorder) -> None:
    """Wrap Triton's launch paths so that they report to ``recorder`` until it exits (no-op without Triton)."""
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
        hook = functools.partial(_launch_hook, recorder)
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


def _user_kernel(recorder, name: str, names, accepted, constexpr_names, grid, args, kwargs, launch):
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
    return record_launch(recorder, name, bound, launch, grid=grid, config={**constexprs, **extra} or None,
                         constexprs=tuple(constexprs))


def interpreter_launch(recorder, original, executor, *args, **kwargs):
    """``GridExecutor.__call__`` under ``TRITON_INTERPRET=1``."""
    spec = inspect.getfullargspec(executor.fn)
    return _user_kernel(recorder, executor.fn.__name__, executor.arg_names, {*spec.args, *spec.kwonlyargs},
                        executor.constexprs, executor.grid, args, kwargs,
                        lambda: original(executor, *args, **kwargs))


def jit_launch(recorder, original, fn, *args, grid, warmup, **kwargs):
    """``JITFunction.run``: a user kernel launched on the GPU (warm-up compilations are not launches)."""
    def launch():
        return original(fn, *args, grid=grid, warmup=warmup, **kwargs)

    if warmup:
        return launch()
    return _user_kernel(recorder, getattr(fn, "__name__", None) or fn.fn.__name__, fn.arg_names, set(fn.arg_names),
                        [p.name for p in fn.params if p.is_constexpr], grid, args, kwargs, launch)


def inductor_launch(recorder, original, tuner, *args, stream, benchmark_run=False, **kwargs):
    """``CachingAutotuner.run``: an Inductor kernel, with the configuration autotuning chose."""
    if benchmark_run:
        return original(tuner, *args, stream=stream, benchmark_run=benchmark_run, **kwargs)
    signature = tuner.triton_meta.get("signature", {})
    configured = set(tuner.configs[0].kwargs) if tuner.configs else set()
    names = [n for n in signature if n not in configured and signature.get(n) != "constexpr"]
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
