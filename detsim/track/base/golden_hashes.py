"""Golden-image hashes: every golden case rendered the way the asv determinism tracks render it (CPU, float64,
one torch thread, the eager or the compiled path), hashed by :func:`~detsim.track.base.hashing.image_sha256`.
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
from detsim.track.base.provenance import MachineClass
from detsim.track.base.runtime import thread_count

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


def render(case: GoldenCase, mode: str = EAGER, dtype: str = DTYPE):
    """The case's image, (slow, fast) in ``dtype`` on the CPU; the caller pins the thread count."""
    import detsim
    from detsim import config_from_argv

    return detsim.simulate(case.config(config_from_argv), device=DEVICE, dtype=getattr(torch, dtype), mode=mode)


def case_sha256(case: GoldenCase, mode: str = EAGER) -> str:
    """The hash of the case's render; raises ValueError for a wrong shape or non-finite values."""
    image = render(case, mode)
    if case.shape is not None and tuple(image.shape) != tuple(case.shape):
        raise ValueError(f"image shape {tuple(image.shape)} != golden shape {tuple(case.shape)}")
    if not bool(image.isfinite().all()):
        raise ValueError("the image has non-finite values")
    return image_sha256(image)


def render_hashes(cases: Iterable[GoldenCase], mode: str = EAGER, threads: int = THREADS) -> GoldenHashes:
    """Render and hash every case with ``threads`` torch threads; a case that fails is recorded in ``failures``
    (NotImplementedError where this detsim cannot run ``mode`` on the CPU)."""
    from detsim.rendering import engine

    if mode not in engine.available_modes(DEVICE):
        raise NotImplementedError(f"this detsim has no {mode} path on the {DEVICE}")
    hashes, failures = {}, {}
    with thread_count(threads):
        for case in cases:
            try:
                hashes[case.id] = case_sha256(case, mode)
            except Exception as exc:  # noqa: BLE001 - reported per case, in one line: ``ErrorType: message``
                failures[case.id] = f"{type(exc).__name__}: {exc}".splitlines()[0]
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
