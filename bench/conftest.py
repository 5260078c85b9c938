"""Fixtures of the benchmark suite: pinned threads, golden workloads, result metadata, planted faults.

The suite times the public ``detsim.simulate`` on golden cases (so every timed image is also checked
against nanoBragg.c) and a calibration workload that does not use detsim; ``detsim-track bench-gate``
compares each benchmark's time relative to the calibration with the committed baseline, and its image
hash (:func:`~detsim.track.base.hashing.image_sha256`) where both recorded the same machine class
(:func:`run_info`).

Planted faults (test-only; they never touch the engine, and they exist so the gate's own test can
prove it fails when it should):

* ``DETSIM_BENCH_SLOWDOWN=N``: the timed callable runs ``simulate`` N times (a planted N× slowdown).
* ``DETSIM_BENCH_PLANT=parity``: the image is shifted by one pixel along the fast axis before it is
  checked and hashed (a parity break).
* ``DETSIM_BENCH_PLANT=hash``: the first pixel is moved up by one ulp (an image change that keeps parity).

Instruction counts: each CPU benchmark also records ``extra_info["instructions"]``, the instructions of
one run of its measured region (or of a small variant of it, named in ``instructions_workload``) counted
under valgrind (:mod:`detsim.track.measure`), once per benchmark and not per round, in a separate process.
Where it cannot be counted, ``instructions_note`` says why in one line. ``DETSIM_BENCH_COUNT=0`` skips
the counts (a quick local run); the gate then notes them as not compared.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from detsim import config_from_argv, SimulationConfig
from detsim.track.base.golden import GoldenCase, find_case, golden_dir
from detsim.track.base.hashing import image_sha256
from detsim.track.base.provenance import MachineClass, cpu_class
from detsim.track.measure.cost import CountError, not_measured_reason
from detsim.track.measure.cost import count as count_region
from detsim.track.measure.cost import CostSpec, count_spec

THREADS = 1  # one torch thread: on small shared runners timings are far steadier (docs/bench-gate.md)
ROOT = Path(__file__).resolve().parents[1]  # the project, whose tests/golden holds the cases
SLOWDOWN_VAR, PLANT_VAR, COUNT_VAR = "DETSIM_BENCH_SLOWDOWN", "DETSIM_BENCH_PLANT", "DETSIM_BENCH_COUNT"
PLANTS = ("parity", "hash", "nondeterministic")  # the last: every round's image differs in one pixel


@dataclass(frozen=True)
class Planted:
    """The faults planted in this run (none by default)."""

    slowdown: int = 1
    fault: str | None = None


@dataclass(frozen=True)
class GoldenWorkload:
    """A golden case ready to time: its configuration, nanoBragg's image and its manifest record."""

    case: GoldenCase
    config: SimulationConfig
    reference: np.ndarray  # (slow, fast) float32 image made by nanoBragg.c


def _planted_from_environment() -> Planted:
    raw_slowdown = os.environ.get(SLOWDOWN_VAR, "1")
    try:
        slowdown = int(raw_slowdown)
    except ValueError:
        slowdown = 0
    if slowdown < 1:
        raise pytest.UsageError(f"{SLOWDOWN_VAR} must be a whole number >= 1, got {raw_slowdown!r}")
    fault = os.environ.get(PLANT_VAR) or None
    if fault is not None and fault not in PLANTS:
        raise pytest.UsageError(f"{PLANT_VAR} must be one of {', '.join(PLANTS)}, got {fault!r}")
    return Planted(slowdown=slowdown, fault=fault)


_PLANTED = pytest.StashKey[Planted]()
_HEAP_KEPT = pytest.StashKey[bool]()
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks (up to 32 MiB each) in the heap instead of returning them to the OS.

    By default every large tensor is a fresh mmap whose pages fault in on first touch; that costs
    up to half of a round's CPU time and swings with the load of a shared runner. Returns False where
    the C library is not glibc (the benchmarks still run, only noisier).
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError, TypeError):
        return False


def pytest_configure(config):
    torch.set_num_threads(THREADS)
    config.stash[_HEAP_KEPT] = keep_freed_memory()
    config.stash[_PLANTED] = _planted_from_environment()


def pytest_benchmark_update_machine_info(config, machine_info):
    """Keep host and kernel names out of result files (they are committed); record what timings depend on."""
    machine_info.pop("node", None)
    machine_info.pop("release", None)
    machine_info["torch"] = torch.__version__
    machine_info["torch_threads"] = torch.get_num_threads()
    machine_info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    machine_info["cpu_class"] = cpu_class(torch.backends.cpu.get_cpu_capability())
    machine_info["heap_kept"] = config.stash[_HEAP_KEPT]


def pytest_report_header(config):
    planted = config.stash[_PLANTED]
    header = f"detsim bench: torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    if planted != Planted():
        header += f", PLANTED slowdown x{planted.slowdown} fault {planted.fault}"
    reason = counts_off_reason()
    return [header, f"detsim bench: {reason}"] if reason else header


def counts_off_reason() -> str | None:
    """Why this run records no instruction counts (one line), or None."""
    if os.environ.get(COUNT_VAR, "1") == "0":
        return f"instruction counts not measured: {COUNT_VAR}=0"
    return not_measured_reason()


_counts: dict = {}  # counted region -> (instructions, note), once per session


def record_instructions(benchmark, key: str, setup: str | None = None, region: str | None = None,
                        *, spec: CostSpec | None = None, note: str | None = None) -> None:
    """Record the instructions of one run of a benchmark's counted region in its ``extra_info``.

    ``spec`` names a detsim render (:mod:`detsim.track.measure.cost`); otherwise ``setup`` and
    ``region`` are the code to count. ``note`` records why a region is not counted. Each ``key`` is
    counted once per session (a count is a fresh ~15 s valgrind process).
    """
    reason = note or counts_off_reason()
    if reason:
        benchmark.extra_info.update(instructions_note=reason)
        return
    if key not in _counts:
        try:
            made = count_spec(spec, root=ROOT, keep=False) if spec else count_region(setup, region, keep=False)
            _counts[key] = (made.instructions, None)
        except CountError as exc:
            _counts[key] = (None, f"instructions not counted: {exc}")
    instructions, failed = _counts[key]
    if failed:
        benchmark.extra_info.update(instructions_note=failed)
    else:
        benchmark.extra_info.update(instructions=instructions, instructions_workload=key)


def pytest_collection_modifyitems(config, items):
    """GPU benchmarks use wall-clock time (bench/pytest.ini sets CPU time for the others)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("device") == "cuda":
            item.add_marker(pytest.mark.benchmark(timer=time.perf_counter))


@pytest.fixture(scope="session")
def planted(pytestconfig) -> Planted:
    return pytestconfig.stash[_PLANTED]


@pytest.fixture(params=["cpu", "cuda"])
def device(request) -> str:
    """cpu always; cuda when this torch build sees a GPU (skipped otherwise)."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA is not available")
    return request.param


@pytest.fixture(params=[torch.float64, torch.float32], ids=["float64", "float32"])
def dtype(request) -> torch.dtype:
    return request.param


def load_workload(case_id: str) -> GoldenWorkload:
    """A golden case of this project, its configuration built once (outside any timed region)."""
    case = find_case(case_id, golden_dir(ROOT))
    return GoldenWorkload(case=case, config=case.config(config_from_argv), reference=case.reference())


def synchronized(fn, device: str):
    """``fn`` followed by a device sync, so that a GPU's queued work is inside the timed region."""
    if device != "cuda":
        return fn

    def timed(*args, **kwargs):
        result = fn(*args, **kwargs)
        torch.cuda.synchronize()
        return result

    return timed


class Rounds:
    """A timed function that keeps every round's image, hashed after the timing (``sha256s``): the bench gate
    checks that one input gave one image within the run. The planted ``nondeterministic`` fault nudges
    one pixel of each round's image by a different number of float units."""

    def __init__(self, fn, fault: str | None = None):
        self.fn, self.fault, self.images = fn, fault, []

    def __call__(self, *args, **kwargs):
        image = self.fn(*args, **kwargs)
        self.images.append(image)
        return image

    def sha256s(self) -> list[str]:
        if self.fault != "nondeterministic":
            return [image_sha256(image) for image in self.images]
        return [image_sha256(_nudged(image, i)) for i, image in enumerate(self.images)]


def _nudged(image: torch.Tensor, units: int) -> torch.Tensor:
    """``image`` with its first pixel moved ``units`` float units up."""
    changed = image.clone()
    first = changed.view(-1)[:1]
    for _ in range(units):
        first.copy_(torch.nextafter(first, torch.full_like(first, float("inf"))))
    return changed


def apply_fault(image: torch.Tensor, fault: str | None) -> torch.Tensor:
    """The image as a planted fault would have changed it (unchanged without one)."""
    if fault == "parity":
        return torch.roll(image, shifts=1, dims=1)
    if fault == "hash":
        return _nudged(image, 1)
    return image


def run_info(device: str, dtype: torch.dtype) -> dict:
    """What every benchmark records about where and how it ran: its machine class (the conditions
    under which its image bits are reproducible; the gate compares hashes only within one), the ATen
    CPU capability and, on cuda, the GPU's name."""
    machine = MachineClass.here(torch, threads=torch.get_num_threads(), dtype=str(dtype).removeprefix("torch."),
                                device=device)
    info = {**machine.as_record(), "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    return info
