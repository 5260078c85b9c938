"""Running the determinism matrix: every target in every configuration, in this process or, isolated, in a
fresh interpreter per run (a non-zero exit, even a segfault, is a crash carrying the child's stderr)."""

from __future__ import annotations

import contextlib
import tempfile
import time
import traceback
from pathlib import Path
from typing import Iterator

import torch

from detsim.track.base.fresh import HERE, run_job, thread_vars
from detsim.track.runtime.process import thread_count
from detsim.track.runtime.targets import DTYPES, Target
from detsim.track.determinism.matrix import Matrix, RunConfig, RunResult, digest_outputs

ISOLATED_RUN = "detsim.track.determinism.isolated_run:run"  # the job of an isolated run


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

    ``isolate`` (the job fields :func:`~detsim.track.determinism.isolated_run.run` needs besides the
    configuration: ``grads``, ``chunk_pixels``, ``golden_dir``) runs every repeat in a fresh interpreter.
    """
    matrix = Matrix(threads=list(threads), repeats=repeats, deterministic=deterministic)
    for target in targets:
        matrix.add_target(target)
        missing = [m for m in modes if m not in target.modes]
        if missing:
            matrix.notes.append(f"{target.name}: {target.kind} targets have no {', '.join(missing)} mode "
                                f"(only {', '.join(target.modes)}); those rows are left out")
        for device in devices:
            reason = device_unavailable(device)
            for dtype in dtypes:
                for mode in (m for m in modes if m in target.modes):
                    skip = reason or target.unavailable(device, mode)
                    for n in threads:
                        config = RunConfig(target.name, device, dtype, mode, n)
                        for repeat in range(repeats):
                            matrix.add(_run_cell(target, config, repeat, skip, deterministic, isolate))
    return matrix


def _run_cell(target: Target, config: RunConfig, repeat: int, skip: str | None, deterministic: bool,
              isolate: dict | None) -> RunResult:
    if skip:
        return RunResult(config, repeat, "skipped", reason=skip)
    if isolate is not None:
        return run_isolated(target, config, repeat, deterministic, isolate)
    return run_once(target, config, repeat, deterministic)


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
