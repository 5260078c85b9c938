"""Running a computation, in this process or in a fresh interpreter, into the run logs compared here.

* The determinism matrix: every computation in every configuration, each run's outputs digested (a
  :class:`~detsim.track.compare.run_log.RunLog` without events); isolated, a fresh interpreter per run (a
  non-zero exit, even a segfault, is a crash carrying the child's stderr).
* One run traced op by op (:class:`~detsim.track.compare.run_log.RunLog`) of a computation as
  ``detsim-track diverge``'s options name it (a :class:`Named` computation: a golden case, a nanoBragg command
  line, a callable, a module or a script), here (:func:`trace_run`) or in a fresh interpreter with a package
  of choice first on its path (:func:`trace_at`: another commit's exported package, or this one).

What crosses to a fresh interpreter is a frozen job (:class:`IsolatedJob`, :class:`TraceJob`: the suite's one
:class:`~detsim.track.base.fresh.Job`), written as JSON and validated when the child reads it back
(:class:`~detsim.track.base.fresh.JobError`, one line)."""

from __future__ import annotations

import contextlib
import inspect
import itertools
import os
import runpy
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import torch

from detsim.track.base.computations import DTYPES, Computation, ComputationError, load_callable, \
    resolve_callable, resolve_case, resolve_command_line
from detsim.track.base.fresh import HERE, ChildError, Job, JobError, run_job, thread_vars
from detsim.track.base.output import atomic_write_text
from detsim.track.base.runtime import device_problem, thread_count
from detsim.track.base.status import Status
from detsim.track.compare.matrix import Matrix
from detsim.track.compare.run_log import RunConfig, RunLog, ended_log, output_log
from detsim.track.compare.tracer import trace

ISOLATED_RUN = "detsim.track.compare.runs:isolated_job"  # an isolated matrix run, in a fresh interpreter
TRACE_RUN = "detsim.track.compare.runs:trace_job"  # a run traced in a fresh interpreter
KINDS = ("golden", "nanobragg", "callable", "module", "script")  # how a command line names a computation
LAYERS = ("ops", "kernels")  # what a trace can hold: aten ops, Triton kernel launches
RUNS = ("A", "B")  # a traced run's name, which picks its fill of never-written memory
INTERPRET = ("auto", "on", "off")  # TRITON_INTERPRET for a traced run (:func:`set_interpreter`)


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise JobError(what)


def _strings(value, what: str) -> tuple[str, ...]:
    _check(isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value),
           f"{what}: expected a list of strings, got {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class Named(Job):
    """A computation as a command line names it: how (``kind``, one of :data:`KINDS`) and by what (``name``: a
    golden case id, a nanoBragg command line, ``module:function``, a module or a script), and how to run it."""

    kind: str
    name: str
    argv: tuple[str, ...] = ()  # a module's or a script's arguments
    device: str = "cpu"
    dtype: str = "float64"  # a key of DTYPES
    mode: str = "eager"
    grads: tuple[str, ...] = ()  # also d(image.sum())/d(each): simulations only
    chunk_pixels: int | None = None
    golden_dir: str | None = None

    def __post_init__(self) -> None:
        _check(self.kind in KINDS, f"computation kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        _check(isinstance(self.name, str) and bool(self.name), f"{self.kind}: expected a name, got {self.name!r}")
        object.__setattr__(self, "argv", _strings(self.argv, "argv"))
        object.__setattr__(self, "grads", _strings(self.grads, "grads"))
        _check(self.dtype in DTYPES, f"dtype {self.dtype!r}: expected one of {', '.join(DTYPES)}")
        _check(isinstance(self.device, str) and isinstance(self.mode, str), "device, mode: expected names")
        _check(self.chunk_pixels is None or (type(self.chunk_pixels) is int and self.chunk_pixels > 0),
               f"chunk_pixels {self.chunk_pixels!r}: expected a positive integer or none")
        _check(self.golden_dir is None or isinstance(self.golden_dir, str), "golden_dir: expected a path or none")

    def computation(self) -> Computation:
        """The detsim simulation (``golden``, ``nanobragg``) or callable (run as ``f(device=, dtype=)``) it
        names; raises ComputationError."""
        if self.kind == "golden":
            return resolve_case(self.name, self.grads, self.chunk_pixels, Path(self.golden_dir) if self.golden_dir
                                else None)
        if self.kind == "nanobragg":
            return resolve_command_line(self.name, self.grads, self.chunk_pixels)
        if self.kind == "callable":
            return resolve_callable(self.name)
        raise ComputationError(f"{self.name}: a {self.kind} returns no outputs; name a case, a command line or "
                               "a callable")

    def call(self) -> tuple[Callable[[], object], str]:
        """It as a zero-argument function on its device, dtype and mode, and its label; raises
        ComputationError."""
        dtype = DTYPES[self.dtype]
        if self.kind in ("golden", "nanobragg"):
            simulation = self.computation()
            return (lambda: simulation.run(self.device, dtype, self.mode)), simulation.name
        if self.kind == "callable":
            fn = load_callable(self.name)
            params = _parameters(fn)
            options = {k: v for k, v in (("device", self.device), ("dtype", dtype)) if k in params}
            return (lambda: fn(**options)), self.name
        if self.kind == "module":
            return (lambda: _run_main(lambda: runpy.run_module(self.name, run_name="__main__", alter_sys=True),
                                      [self.name, *self.argv])), f"-m {self.name}"
        path = str(Path(self.name))
        return (lambda: _run_main(lambda: runpy.run_path(path, run_name="__main__"), [path, *self.argv])), self.name


class _RunJob(Job):
    """What both jobs of a fresh interpreter check: a named computation, a thread count, an output path."""

    def _check_common(self) -> None:
        _check(isinstance(self.computation, Named), "computation: expected a named computation")
        _check(type(self.threads) is int and self.threads > 0, f"threads {self.threads!r}: expected a positive integer")
        _check(isinstance(self.out, str) and bool(self.out), "out: expected a path")


@dataclass(frozen=True)
class IsolatedJob(_RunJob):
    """One run of the matrix in a fresh interpreter: the computation's outputs saved to ``out`` (torch.save)."""

    computation: Named  # its device, dtype and mode are the run's
    threads: int
    deterministic: bool
    out: str

    def __post_init__(self) -> None:
        self._check_common()
        _check(isinstance(self.deterministic, bool), "deterministic: expected true or false")


@dataclass(frozen=True)
class TraceJob(_RunJob):
    """One run traced op by op in a fresh interpreter, its log written to ``out``."""

    computation: Named
    layers: tuple[str, ...]  # of LAYERS
    interpret: str  # of INTERPRET
    threads: int
    run: str  # of RUNS
    out: str

    def __post_init__(self) -> None:
        self._check_common()
        object.__setattr__(self, "layers", _strings(self.layers, "layers"))
        _check(set(self.layers) <= set(LAYERS), f"layers {list(self.layers)}: expected some of {', '.join(LAYERS)}")
        _check(self.interpret in INTERPRET, f"interpret {self.interpret!r}: expected one of {', '.join(INTERPRET)}")
        _check(self.run in RUNS, f"run {self.run!r}: expected one of {', '.join(RUNS)}")


@contextlib.contextmanager
def deterministic_mode(enabled: bool) -> Iterator[None]:
    """``torch.use_deterministic_algorithms(True)`` and inductor's ``deterministic`` for the block."""
    if not enabled:
        yield
        return
    import torch._inductor.config as inductor_config

    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              inductor_config.deterministic)
    torch.use_deterministic_algorithms(True)
    inductor_config.deterministic = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        inductor_config.deterministic = before[2]


def run_matrix(computations: Sequence[Computation], *, devices, dtypes, modes, threads, repeats: int,
               deterministic: bool = False, isolate: Sequence[Named] | None = None) -> Matrix:
    """Run every configuration ``repeats`` times; crashes and unavailable devices are recorded, not raised.
    ``isolate``: what named each computation, in order; given, each repeat runs in a fresh interpreter that
    resolves it again (:func:`run_isolated`)."""
    matrix = Matrix(threads=list(threads), repeats=repeats, deterministic=deterministic)
    for computation, named in zip(computations, isolate or [None] * len(computations)):
        matrix.computations[computation.name] = computation
        missing = [m for m in modes if m not in computation.modes]
        if missing:
            matrix.notes.append(f"{computation.name}: {computation.kind} computations have no {', '.join(missing)} "
                                f"mode (only {', '.join(computation.modes)}); those rows are left out")
        cells = itertools.product(devices, dtypes, [m for m in modes if m in computation.modes], threads,
                                  range(repeats))
        for device, dtype, mode, n, repeat in cells:
            config = RunConfig(computation.name, device, dtype, mode, n)
            skip = device_problem(device) or computation.unavailable(device, mode)
            if skip:
                matrix.add(ended_log(config, repeat, Status.SKIPPED, reason=skip))
            elif named is not None:
                matrix.add(run_isolated(named, config, repeat, deterministic))
            else:
                matrix.add(run_once(computation, config, repeat, deterministic))
    return matrix


def run_once(computation: Computation, config: RunConfig, repeat: int, deterministic: bool) -> RunLog:
    """One run in this process; an exception becomes a crashed result with the traceback verbatim."""
    start = time.perf_counter()
    try:
        outputs = _cpu_outputs(computation, config.device, config.dtype, config.mode, config.threads, deterministic)
    except Exception:
        return ended_log(config, repeat, Status.CRASHED, seconds=time.perf_counter() - start,
                         error=traceback.format_exc())
    return output_log(config, repeat, outputs, time.perf_counter() - start)


def run_isolated(named: Named, config: RunConfig, repeat: int, deterministic: bool) -> RunLog:
    """One run of ``named`` in a fresh interpreter; a non-zero exit (even a segfault) is a crash with its
    stderr."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="detsim-determinism-") as tmp:
        saved = Path(tmp) / "outputs.pt"
        job = IsolatedJob(replace(named, device=config.device, dtype=config.dtype, mode=config.mode),
                          config.threads, deterministic, str(saved))
        # this package first, then the working directory (as ``python -m`` has it) for callables named by module
        done = run_job(ISOLATED_RUN, job, path=(HERE, Path.cwd()), env=thread_vars(config.threads),
                       check=False)
        seconds = time.perf_counter() - start
        if done.result is None:
            error = done.stderr or f"worker exited with status {done.returncode} and no output"
            return ended_log(config, repeat, Status.CRASHED, seconds=seconds,
                             error=f"[isolated worker, exit status {done.returncode}]\n{error}")
        outputs = torch.load(saved, weights_only=True)
    return output_log(config, repeat, outputs, seconds)


def isolated_job(job: IsolatedJob) -> dict:
    """In the fresh interpreter: run the :class:`IsolatedJob`'s computation once and save its outputs."""
    named = job.computation
    outputs = _cpu_outputs(named.computation(), named.device, named.dtype, named.mode, job.threads, job.deterministic)
    torch.save(outputs, job.out)
    return {"saved": sorted(outputs)}


def _cpu_outputs(computation: Computation, device: str, dtype: str, mode: str, threads: int,
                 deterministic: bool) -> dict[str, torch.Tensor]:
    """One run's outputs, copied to the CPU (which waits for the device), at ``threads`` threads."""
    with thread_count(threads), deterministic_mode(deterministic):
        outputs = computation.run(device, DTYPES[dtype], mode)
        return {k: v.detach().to("cpu") for k, v in outputs.items()}


# -- one run traced op by op --------------------------------------------------------------------------------


class EndedWithoutLog(BaseException):
    """The computation ended the process (``os._exit``); a BaseException, so that its ``except Exception`` lets
    it by."""


def set_interpreter(choice: str) -> None:
    """Set ``TRITON_INTERPRET`` for ``choice`` (``on``, ``off``, ``auto``: on without CUDA), before the
    computation and its ``@triton.jit`` kernels are imported."""
    if choice == "on" or (choice == "auto" and "TRITON_INTERPRET" not in os.environ
                          and not torch.cuda.is_available()):
        os.environ["TRITON_INTERPRET"] = "1"
    elif choice == "off":
        os.environ.pop("TRITON_INTERPRET", None)


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


def trace_run(call: Callable[[], object], label: str, threads: int, layers=LAYERS, *, run: str = "A") -> RunLog:
    """Trace run ``run`` (``A`` or ``B``: its fill of never-written memory) of ``call`` at ``threads`` threads."""
    with thread_count(threads), _no_hard_exit(label, run):
        return trace(call, label=label, ops="ops" in layers, kernels="kernels" in layers, fill=RUNS.index(run))


@contextlib.contextmanager
def _no_hard_exit(label: str, run: str):
    """``os._exit`` in this process (not in a child it forks) raises :class:`EndedWithoutLog` instead."""
    real_exit, pid = os._exit, os.getpid()

    def hard_exit(status: int = 0):
        if os.getpid() != pid:
            real_exit(status)
        raise EndedWithoutLog(f"{label}: run {run} ended without a log: the computation called "
                              f"os._exit({status}), which ends the process before anything can be compared")

    os._exit = hard_exit
    try:
        yield
    finally:
        os._exit = real_exit


def trace_job(job: TraceJob) -> dict:
    """In a fresh interpreter (:func:`trace_at`): trace one run of the :class:`TraceJob`'s computation into its
    ``out``."""
    set_interpreter(job.interpret)
    call, label = job.computation.call()
    try:
        log = trace_run(call, label, job.threads, job.layers, run=job.run)
    except EndedWithoutLog as exc:
        return {"ended": str(exc)}
    atomic_write_text(Path(job.out), log.to_json())
    return {"label": label}


class TracingError(RuntimeError):
    """A side whose run could not be traced (one line)."""


def trace_at(named: Named, out: Path, *, path: Sequence[Path] = (HERE,), python: str | None = None,
             run: str = "A", threads: int = 1, layers: Sequence[str] = LAYERS, interpret: str = "auto",
             cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float | None = 900,
             what: str | None = None) -> RunLog:
    """Trace run ``run`` of ``named`` in a fresh interpreter, ``path`` first on its ``PYTHONPATH``; the log is
    also left in ``out``. Raises :class:`TracingError` when the process fails or the run ends it."""
    job = TraceJob(named, tuple(layers), interpret, threads, run, str(out))
    try:
        answer = run_job(TRACE_RUN, job, python=python, path=path, cwd=cwd or out.parent, env=env,
                         timeout=timeout, what=what or f"tracing at {path[0]}").result
    except ChildError as exc:
        raise TracingError(str(exc)) from None
    if "ended" in answer:
        raise TracingError(answer["ended"])
    return RunLog.load(out)
