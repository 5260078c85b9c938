"""Running a target, in this process or in a fresh interpreter, into the records compared here.

* The determinism matrix: every target in every configuration, each run's outputs digested (a
  :class:`~detsim.track.compare.record.RunRecord` without events); isolated, a fresh interpreter per run (a
  non-zero exit, even a segfault, is a crash carrying the child's stderr).
* One run recorded op by op (:class:`~detsim.track.compare.record.RunRecord`) of a target given as
  ``detsim-track diverge``'s options name it (``case``, ``nanobragg``, ``call``, ``module`` or ``script``),
  here (:func:`record_run`) or in a fresh interpreter with a package of choice first on its path
  (:func:`record_at`: another commit's exported package, or this one)."""

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
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import torch

from detsim.track.base.fresh import HERE, ChildError, run_job, thread_vars
from detsim.track.compare.matrix import Matrix
from detsim.track.compare.record import RunConfig, RunRecord, ended_record, output_record
from detsim.track.base.status import Status
from detsim.track.compare.recorder import record
from detsim.track.base.output import atomic_write_text
from detsim.track.base.runtime import thread_count
from detsim.track.base.targets import DTYPES, Computation, load_callable, resolve_callable, resolve_case, \
    resolve_command_line

ISOLATED_RUN = "detsim.track.compare.runs:isolated_job"  # the job of an isolated matrix run
RECORD_RUN = "detsim.track.compare.runs:record_job"  # the job of a run recorded in a fresh interpreter


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


def run_matrix(targets: list[Computation], *, devices, dtypes, modes, threads, repeats: int,
               deterministic: bool = False, isolate: dict | None = None) -> Matrix:
    """Run every configuration ``repeats`` times; crashes and unavailable devices are recorded, not raised.
    ``isolate``: the job fields of :func:`isolated_job` besides the configuration (run each repeat there)."""
    matrix = Matrix(threads=list(threads), repeats=repeats, deterministic=deterministic)
    for target in targets:
        matrix.targets[target.name] = target
        missing = [m for m in modes if m not in target.modes]
        if missing:
            matrix.notes.append(f"{target.name}: {target.kind} targets have no {', '.join(missing)} mode "
                                f"(only {', '.join(target.modes)}); those rows are left out")
        cells = itertools.product(devices, dtypes, [m for m in modes if m in target.modes], threads, range(repeats))
        for device, dtype, mode, n, repeat in cells:
            config = RunConfig(target.name, device, dtype, mode, n)
            skip = device_unavailable(device) or target.unavailable(device, mode)
            if skip:
                matrix.add(ended_record(config, repeat, Status.SKIPPED, reason=skip))
            elif isolate is not None:
                matrix.add(run_isolated(target, config, repeat, deterministic, isolate))
            else:
                matrix.add(run_once(target, config, repeat, deterministic))
    return matrix


def device_unavailable(device: str) -> str | None:
    """Why a device cannot run here, or None."""
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        return f"not a torch device: {exc}"
    if dev.type == "cuda" and not torch.cuda.is_available():
        return "torch.cuda.is_available() is False" + ("" if torch.version.cuda else " (CPU-only torch build)")
    return None


def run_once(target: Computation, config: RunConfig, repeat: int, deterministic: bool) -> RunRecord:
    """One run in this process; an exception becomes a crashed result with the traceback verbatim."""
    start = time.perf_counter()
    try:
        with thread_count(config.threads), deterministic_mode(deterministic):
            outputs = target.run(config.device, DTYPES[config.dtype], config.mode)
            if config.device.startswith("cuda"):
                torch.cuda.synchronize()
            outputs = {k: v.detach().to("cpu") for k, v in outputs.items()}
    except Exception:
        return ended_record(config, repeat, Status.CRASHED, seconds=time.perf_counter() - start,
                            error=traceback.format_exc())
    return output_record(config, repeat, outputs, time.perf_counter() - start)


def run_isolated(target: Computation, config: RunConfig, repeat: int, deterministic: bool, isolate: dict) -> RunRecord:
    """One run in a fresh interpreter; a non-zero exit (even a segfault) is a crash with its stderr."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="detsim-determinism-") as tmp:
        saved = Path(tmp) / "outputs.pt"
        key = {"golden": "case", "nanobragg": "nanobragg"}.get(target.kind, "call")
        job = {**isolate, key: target.spec, "device": config.device, "dtype": config.dtype,
               "mode": config.mode, "threads": config.threads, "deterministic": deterministic, "out": str(saved)}
        # this package first, then the working directory (as ``python -m`` has it) for targets named by module
        done = run_job(ISOLATED_RUN, job, path=(HERE, Path.cwd()), env=thread_vars(config.threads),
                       check=False)
        seconds = time.perf_counter() - start
        if done.result is None:
            error = done.stderr or f"worker exited with status {done.returncode} and no output"
            return ended_record(config, repeat, Status.CRASHED, seconds=seconds,
                                error=f"[isolated worker, exit status {done.returncode}]\n{error}")
        outputs = torch.load(saved, weights_only=True)
    return output_record(config, repeat, outputs, seconds)


def job_target(target: dict) -> Computation:
    """The detsim simulation (``case``, ``nanobragg``) or callable (``call``, run as ``f(device=, dtype=)``)
    that a target dict names, with its ``grads``, ``chunk_pixels`` and ``golden_dir``; raises TargetError."""
    grads, chunk, golden = tuple(target.get("grads", ())), target.get("chunk_pixels"), target.get("golden_dir")
    if target.get("case"):
        return resolve_case(target["case"], grads, chunk, Path(golden) if golden else None)
    if target.get("nanobragg"):
        return resolve_command_line(target["nanobragg"], grads, chunk)
    return resolve_callable(target["call"])


def isolated_job(job: dict) -> dict:
    """In the fresh interpreter: run the job's target once and save its outputs to ``job["out"]``."""
    with thread_count(job["threads"]), deterministic_mode(job["deterministic"]):
        outputs = job_target(job).run(job["device"], DTYPES[job["dtype"]], job["mode"])
    torch.save({k: v.detach().to("cpu") for k, v in outputs.items()}, job["out"])
    return {"saved": sorted(outputs)}


# -- one run recorded op by op ------------------------------------------------------------------------------

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
    if target.get("case") or target.get("nanobragg"):
        simulation = job_target(target)
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


def record_run(call: Callable[[], object], label: str, threads: int, layers=LAYERS, *, run: str = "A") -> RunRecord:
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


def record_job(job: dict) -> dict:
    """In a fresh interpreter (:func:`record_at`): record one run of ``job["target"]`` into ``job["out"]``."""
    set_interpreter(job["interpret"])
    call, label = build_call(job["target"])
    try:
        rec = record_run(call, label, job["threads"], job["layers"], run=job["run"])
    except EndedWithoutRecord as exc:
        return {"ended": str(exc)}
    atomic_write_text(Path(job["out"]), rec.to_json())
    return {"label": label}


class RecordError(RuntimeError):
    """A side whose run could not be recorded (one line)."""


def record_at(target: dict, out: Path, *, path: Sequence[Path] = (HERE,), python: str | None = None,
              run: str = "A", threads: int = 1, layers: Sequence[str] = LAYERS, interpret: str = "auto",
              cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float | None = 900,
              what: str | None = None) -> RunRecord:
    """Record run ``run`` of ``target`` in a fresh interpreter, ``path`` first on its ``PYTHONPATH``; the
    record is also left in ``out``. Raises :class:`RecordError` when the process fails or the run ends it."""
    job = {"target": target, "layers": list(layers), "interpret": interpret, "threads": threads, "run": run,
           "out": str(out)}
    try:
        answer = run_job(RECORD_RUN, job, python=python, path=path,
                         cwd=cwd or out.parent, env=env, timeout=timeout, what=what or f"recording at {path[0]}").result
    except ChildError as exc:
        raise RecordError(str(exc)) from None
    if "ended" in answer:
        raise RecordError(answer["ended"])
    return RunRecord.load(out)
