"""Running the determinism matrix: every target in every configuration, in this process or, isolated, in a
fresh interpreter per run (a non-zero exit, even a segfault, is a crash carrying the child's stderr)."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
import time
import traceback
from pathlib import Path
from typing import Iterator

import torch

from detsim.track.base.fresh import HERE, run_job, thread_vars
from detsim.track.runtime.process import thread_count
from detsim.track.runtime.targets import DTYPES, Target, resolve_callable, resolve_case, resolve_command_line
from detsim.track.determinism.matrix import Matrix, RunConfig, RunResult, digest_outputs

ISOLATED_RUN = "detsim.track.determinism.runs:isolated_job"  # the job of an isolated run


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


def run_matrix(targets: list[Target], *, devices, dtypes, modes, threads, repeats: int,
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
                matrix.add(RunResult(config, repeat, "skipped", reason=skip))
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


def run_once(target: Target, config: RunConfig, repeat: int, deterministic: bool) -> RunResult:
    """One run in this process; an exception becomes a crashed result with the traceback verbatim."""
    start = time.perf_counter()
    try:
        with thread_count(config.threads), deterministic_mode(deterministic):
            outputs = target.run(config.device, DTYPES[config.dtype], config.mode)
            if config.device.startswith("cuda"):
                torch.cuda.synchronize()
            outputs = {k: v.detach().to("cpu") for k, v in outputs.items()}
    except Exception:
        return RunResult(config, repeat, "crashed", seconds=time.perf_counter() - start, error=traceback.format_exc())
    return RunResult(config, repeat, "ok", seconds=time.perf_counter() - start, hashes=digest_outputs(outputs),
                     outputs=outputs)


def run_isolated(target: Target, config: RunConfig, repeat: int, deterministic: bool, isolate: dict) -> RunResult:
    """One run in a fresh interpreter; a non-zero exit (even a segfault) is a crash with its stderr."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="detsim-determinism-") as tmp:
        saved = Path(tmp) / "outputs.pt"
        job = {**isolate, "kind": target.kind, "spec": target.spec, "device": config.device, "dtype": config.dtype,
               "mode": config.mode, "threads": config.threads, "deterministic": deterministic, "out": str(saved)}
        # this package first, then the working directory (as ``python -m`` has it) for targets named by module
        done = run_job(ISOLATED_RUN, job, path=(HERE, Path.cwd()), env=thread_vars(config.threads),
                       check=False)
        seconds = time.perf_counter() - start
        if done.result is None:
            error = done.stderr or f"worker exited with status {done.returncode} and no output"
            return RunResult(config, repeat, "crashed", seconds=seconds,
                             error=f"[isolated worker, exit status {done.returncode}]\n{error}")
        outputs = torch.load(saved, weights_only=True)
    return RunResult(config, repeat, "ok", seconds=seconds, hashes=digest_outputs(outputs), outputs=outputs)


def job_target(job: dict) -> Target:
    """The target an isolated run's job names (its kind and spec, as the parent resolved them)."""
    grads, chunk = tuple(job["grads"]), job["chunk_pixels"]
    if job["kind"] == "golden":
        folder = job.get("golden_dir")
        return resolve_case(job["spec"], grads, chunk, Path(folder) if folder else None)
    if job["kind"] == "nanobragg":
        return resolve_command_line(job["spec"], grads, chunk)
    return resolve_callable(job["spec"])


def isolated_job(job: dict) -> dict:
    """In the fresh interpreter: run the job's target once and save its outputs to ``job["out"]``."""
    with thread_count(job["threads"]), deterministic_mode(job["deterministic"]):
        outputs = job_target(job).run(job["device"], DTYPES[job["dtype"]], job["mode"])
    torch.save({k: v.detach().to("cpu") for k, v in outputs.items()}, job["out"])
    return {"saved": sorted(outputs)}
