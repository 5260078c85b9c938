"""Recording one run of a target (``case``, ``nanobragg``, ``call``, ``module`` or ``script``, the keys of
``detsim-track diverge``'s options) in this process, or as a job of :func:`detsim.track.base.fresh.run_job`."""

from __future__ import annotations

import contextlib
import inspect
import os
import runpy
import sys
from pathlib import Path
from typing import Callable

import torch

from detsim.track.runtime.output import atomic_write_text
from detsim.track.runtime.process import thread_count
from detsim.track.runtime.targets import DTYPES, load_callable, resolve_case, resolve_command_line
from detsim.track.divergence.events import Record
from detsim.track.divergence.recorder import record

LAYERS = ("ops", "kernels")  # what a record can hold: aten ops, Triton kernel launches


class EndedWithoutRecord(BaseException):
    """The target ended the process (``os._exit``); a BaseException, so that its ``except Exception`` lets it by."""


def set_interpreter(choice: str) -> None:
    """Set ``TRITON_INTERPRET`` for ``choice`` (``on``, ``off``, ``auto``: on without CUDA), before the target
    and its ``@triton.jit`` kernels are imported."""
    if choice == "on" or (choice == "auto" and "TRITON_INTERPRET" not in os.environ
                          and not torch.cuda.is_available()):
        os.environ["TRITON_INTERPRET"] = "1"
    elif choice == "off":
        os.environ.pop("TRITON_INTERPRET", None)


def build_call(target: dict) -> tuple[Callable[[], object], str]:
    """The target as a zero-argument function, and its label; raises TargetError."""
    dtype = DTYPES[target.get("dtype", "float64")]
    device, mode = target.get("device", "cpu"), target.get("mode", "eager")
    grads, chunk = tuple(target.get("grads", ())), target.get("chunk_pixels")
    if target.get("case") or target.get("nanobragg"):
        golden = target.get("golden_dir")
        simulation = resolve_case(target["case"], grads, chunk, Path(golden) if golden else None) \
            if target.get("case") else resolve_command_line(target["nanobragg"], grads, chunk)
        return (lambda: simulation.run(device, dtype, mode)), simulation.name
    argv = list(target.get("argv", ()))
    if target.get("call"):
        fn = load_callable(target["call"])
        params = _parameters(fn)
        options = {k: v for k, v in (("device", device), ("dtype", dtype)) if k in params}
        return (lambda: fn(**options)), target["call"]
    if target.get("module"):
        module = target["module"]
        return (lambda: _run_main(lambda: runpy.run_module(module, run_name="__main__", alter_sys=True),
                                  [module, *argv])), f"-m {module}"
    path = str(Path(target["script"]))
    return (lambda: _run_main(lambda: runpy.run_path(path, run_name="__main__"), [path, *argv])), target["script"]


def _parameters(fn: Callable) -> set[str]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return {"device", "dtype"}
    return set(params)


def _run_main(run_it: Callable[[], object], argv: list[str]) -> None:
    saved = sys.argv
    sys.argv = argv
    try:
        run_it()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise RuntimeError(f"{argv[0]} exited with status {exc.code}") from None
    finally:
        sys.argv = saved


def record_run(call: Callable[[], object], label: str, threads: int, layers=LAYERS, *, run: str = "A") -> Record:
    """Record run ``run`` (``A`` or ``B``: its fill of never-written memory) of ``call`` at ``threads`` threads."""
    with thread_count(threads), _no_hard_exit(label, run):
        return record(call, label=label, ops="ops" in layers, kernels="kernels" in layers, fill="AB".index(run))


@contextlib.contextmanager
def _no_hard_exit(label: str, run: str):
    """``os._exit`` in this process (not in a child it forks) raises :class:`EndedWithoutRecord` instead."""
    real_exit, pid = os._exit, os.getpid()

    def hard_exit(status: int = 0):
        if os.getpid() != pid:
            real_exit(status)
        raise EndedWithoutRecord(f"{label}: run {run} ended without a record: the target called "
                                 f"os._exit({status}), which ends the process before anything can be compared")

    os._exit = hard_exit
    try:
        yield
    finally:
        os._exit = real_exit


def run(job: dict) -> dict:
    """The job (see the module docstring): record one run and write it to ``job["out"]``."""
    set_interpreter(job["interpret"])
    call, label = build_call(job["target"])
    try:
        rec = record_run(call, label, job["threads"], job["layers"], run=job["run"])
    except EndedWithoutRecord as exc:
        return {"ended": str(exc)}
    atomic_write_text(Path(job["out"]), rec.to_json())
    return {"label": label}
