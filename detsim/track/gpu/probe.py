"""The machine the check runs on, asked in a child process as every step is: the suite's record of the
environment (:func:`detsim.track.base.runtime.environment`) and, on CUDA, the device's name, capability,
multiprocessors and memory."""

from __future__ import annotations

from pathlib import Path


from detsim.track.base.status import Status

ENTRY = "detsim.track.gpu.probe:probe_job"


def probe_job(job: dict) -> dict:
    """``job``: {"root": the checkout}. ``cuda`` is None where torch sees no CUDA device."""
    import torch

    from detsim.track.base.runtime import environment

    env = environment(Path(job["root"]))
    cuda = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        cuda = {"name": props.name, "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count, "memory_gib": round(props.total_memory / 2**30, 1),
                "cuda_version": torch.version.cuda, "driver_devices": torch.cuda.device_count()}
    return {"environment": env, "cuda": cuda}


def judge(data: dict) -> tuple[Status, str]:
    return Status.OK, ""
