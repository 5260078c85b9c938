"""The job of an isolated determinism run in its fresh interpreter: rebuild the target, run it once, save its
outputs with ``torch.save``."""

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
