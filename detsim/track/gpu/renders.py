"""One render on one path inside a device-check job: the configuration of a workload, the device made ready,
the render timed to its end (the device synchronized), its image hashed, and the operations it launched.

Runs in the jobs' child processes (:mod:`detsim.track.gpu.speed`, :mod:`detsim.track.gpu.parity`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from detsim.track.base.hashing import image_sha256
from detsim.track.gpu.plan import GpuPath, workload

DTYPES = {"float64": torch.float64, "float32": torch.float32}


@dataclass(frozen=True)
class PathRender:
    """A finished render: its image (on the CPU, float64), the image's sha256 and its wall seconds."""

    image: object  # numpy array (slow, fast)
    sha256: str
    seconds: float


def ready(device: str) -> torch.device:
    """The device, its context made (so that no timing includes the driver's start-up)."""
    dev = torch.device(device)
    torch.zeros(1, device=dev)
    synchronize(dev)
    return dev


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def workload_config(name: str):
    """The configuration the ``detsim`` command reads from a workload's nanoBragg command line."""
    from detsim import config_from_argv

    return workload(name).config(config_from_argv)


def render(config, path: GpuPath, device: torch.device) -> PathRender:
    """Prepare and render ``config`` on ``path``, timed from the start to the device's last kernel."""
    from detsim import prepare, render as engine_render

    started = time.perf_counter()
    with torch.no_grad():
        image, _ = engine_render(prepare(config, device=device, dtype=DTYPES[path.dtype]), mode=path.mode)
    synchronize(device)
    seconds = time.perf_counter() - started
    ours = image.detach().cpu().double().numpy()
    return PathRender(ours, image_sha256(ours), seconds)


def fused(config, path: GpuPath, device: torch.device) -> bool:
    """Whether ``path`` renders ``config`` with its own fused kernel (else the eager code does the work)."""
    from detsim.rendering import paths as render_paths
    from detsim import prepare

    return path.mode != "eager" and render_paths.fusable(prepare(config, device=device, dtype=DTYPES[path.dtype]))


def launches(config, path: GpuPath, device: torch.device) -> dict:
    """What one render asks of the device, by ``torch.profiler``: ``aten_ops`` (top-level ATen calls, on any
    device), and on CUDA ``kernels`` and ``memory_ops`` (copies and fills) the device ran."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        render(config, path, device)
    counts = {"aten_ops": 0, "kernels": None, "memory_ops": None}
    if device.type == "cuda":
        counts.update(kernels=0, memory_ops=0)
    for event in prof.events():
        if event.device_type == DeviceType.CUDA:
            memory = event.name.lower().startswith(("memcpy", "memset"))
            counts["memory_ops" if memory else "kernels"] += 1
        elif event.cpu_parent is None and event.name.startswith("aten::"):
            counts["aten_ops"] += 1
    return counts
