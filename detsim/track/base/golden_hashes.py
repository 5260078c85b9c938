"""Golden-image hashes: every golden case rendered the way the asv determinism tracks render it (the suite's one
parity loop and timed render; CPU, float64, one torch thread, the eager or the compiled path), hashed by
:func:`~detsim.track.base.hashing.image_sha256`.
Bit-exact hashes only reproduce on the same machine class (:func:`machine_class`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import torch

from detsim.track.base.golden import RENDER_DEVICE as DEVICE, RENDER_DTYPE as DTYPE, RENDER_THREADS as THREADS, \
    GoldenCase
from detsim.track.base.fresh import Job
from detsim.track.base.hashing import image_sha256
from detsim.track.base.parity import golden_parity
from detsim.track.base.provenance import MachineClass
from detsim.track.base.runtime import thread_count
from detsim.track.base.timing import Timed, timed

EAGER, COMPILED = "eager", "compiled"


@dataclass(frozen=True)
class GoldenHashes:
    """The outcome of rendering golden cases by one path."""

    mode: str  # "eager" or "compiled"
    hashes: Mapping[str, str] = field(default_factory=dict)  # case id -> image sha256, in case order
    failures: Mapping[str, str] = field(default_factory=dict)  # case id -> "ErrorType: first line"


def machine_class() -> MachineClass:
    """The conditions the golden hashes of this machine hold for."""
    return MachineClass.here(torch, threads=THREADS, dtype=DTYPE, device=DEVICE)


def render_hashes(cases: Iterable[GoldenCase], mode: str = EAGER, threads: int = THREADS,
                  dtype: str = DTYPE) -> GoldenHashes:
    """Every case through the suite's one parity loop (:func:`~.parity.golden_parity`) with ``threads`` torch
    threads, timed as the asv tracks render it (``benchmarks/common.py``: ``golden_render``), its image hashed; a
    case that fails (a non-finite value included) is recorded in ``failures`` (NotImplementedError where this
    detsim cannot run ``mode`` on the CPU)."""
    from detsim import config_from_argv, simulate
    from detsim.rendering import engine

    if mode not in engine.available_modes(DEVICE):
        raise NotImplementedError(f"this detsim has no {mode} path on the {DEVICE}")

    def render(config) -> Timed:
        done = timed(torch, lambda: simulate(config, device=DEVICE, dtype=getattr(torch, dtype), mode=mode), DEVICE)
        if not bool(done.result.isfinite().all()):
            raise ValueError("the image has non-finite values")
        return done

    hashes, failures = {}, {}
    with thread_count(threads):
        for done in golden_parity(cases, config_from_argv, render):
            if done.image is None:
                failures[done.case.id] = done.error
            else:
                hashes[done.case.id] = image_sha256(done.image)
    return GoldenHashes(mode=mode, hashes=hashes, failures=failures)


@dataclass(frozen=True)
class RerunJob(Job):
    """The second run of golden cases (:func:`rerun`): ``cases`` (ids, in ``golden_dir``) by each (mode, threads)
    of ``runs``."""

    cases: tuple[str, ...]
    golden_dir: str
    runs: tuple[tuple[str, int], ...]


def rerun(job: RerunJob) -> dict:
    """A job of :func:`detsim.track.base.fresh.run_job`: the golden hashes of the job's cases for each of its runs,
    rendered in this interpreter: ``"mode@threads"`` -> ``{"hashes", "failures"}``."""
    from detsim.track.base.golden import load_cases

    wanted = set(job.cases)
    cases = [case for case in load_cases(Path(job.golden_dir)) if case.id in wanted]
    out = {}
    for mode, threads in job.runs:
        done = render_hashes(cases, mode, threads)
        out[f"{mode}@{threads}"] = {"hashes": dict(done.hashes), "failures": dict(done.failures)}
    return out


def in_a_fresh_process(cases: Iterable[GoldenCase], golden: Path,
                       runs: list[tuple[str, int]]) -> dict[tuple[str, int], GoldenHashes]:
    """:func:`render_hashes` of ``cases`` for each ``(mode, threads)`` of ``runs``, in one fresh interpreter
    (``PYTHONHASHSEED=1``): what a second run of the same input gives."""
    from detsim.track.base.fresh import run_job, thread_vars

    job = RerunJob(tuple(case.id for case in cases), str(golden), tuple((mode, threads) for mode, threads in runs))
    env = {**thread_vars(max(threads for _, threads in runs)), "PYTHONHASHSEED": "1"}
    answer = run_job(f"{__name__}:rerun", job, env=env, timeout=1800, what="the second run of the golden cases").result
    return {(mode, threads): GoldenHashes(mode, answer[f"{mode}@{threads}"]["hashes"],
                                          answer[f"{mode}@{threads}"]["failures"]) for mode, threads in runs}
