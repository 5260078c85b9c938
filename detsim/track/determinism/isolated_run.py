"""What an isolated determinism run does in its fresh interpreter (a job of :func:`detsim.track.base.fresh.run_job`).

The job holds the run's configuration (``device``, ``dtype``, ``mode``, ``threads``, ``deterministic``),
the target as the parent resolved it (``kind`` and ``spec``, with ``grads``, ``chunk_pixels``,
``golden_dir``) and ``out``, where the outputs (CPU tensors) are saved with ``torch.save``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from detsim.track.runtime.process import thread_count
from detsim.track.runtime.targets import DTYPES, Target, resolve_callable, resolve_case, resolve_command_line
from detsim.track.determinism.runs import deterministic_mode


def job_target(job: dict) -> Target:
    """The target a job names (its kind and spec, as the parent resolved them)."""
    grads, chunk = tuple(job["grads"]), job["chunk_pixels"]
    if job["kind"] == "golden":
        folder = job.get("golden_dir")
        return resolve_case(job["spec"], grads, chunk, Path(folder) if folder else None)
    if job["kind"] == "nanobragg":
        return resolve_command_line(job["spec"], grads, chunk)
    return resolve_callable(job["spec"])


def run(job: dict) -> dict:
    """Run the job's target once and save its outputs to ``job["out"]``; the names of the outputs saved."""
    target = job_target(job)
    with thread_count(job["threads"]), deterministic_mode(job["deterministic"]):
        outputs = target.run(job["device"], DTYPES[job["dtype"]], job["mode"])
    torch.save({k: v.detach().to("cpu") for k, v in outputs.items()}, job["out"])
    return {"saved": sorted(outputs)}
