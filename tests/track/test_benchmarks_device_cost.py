"""The device costs of the asv suite (``benchmarks/bench_device_cost.py``): each track reads its own number,
a commit without a path or the kernel report skips with one line, and the count's record has every unit."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    """The module, imported as asv imports it (the suite pins torch to one thread: undone)."""
    threads = torch.get_num_threads()
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("benchmarks.bench_device_cost")
    finally:
        sys.path.remove(str(ROOT))
        torch.set_num_threads(threads)


def test_each_launch_track_reads_its_own_count_and_a_missing_path_skips(bench, monkeypatch):
    counted = {"eager": {"launches": 223, "copies": 1, "syncs": 2}, "compiled": {"launches": 127, "copies": 0,
               "syncs": 0}, "triton": {"skip": "mode 'triton' does not run on the CPU with this commit"}}
    monkeypatch.setattr(bench.common, "count_launches", lambda modes: counted)
    suite = bench.LaunchesPerRender()
    counts = suite.setup_cache()
    suite.setup(counts, "eager")
    assert (suite.track_launches(counts, "eager"), suite.track_copies(counts, "eager"),
            suite.track_syncs(counts, "eager")) == (223, 1, 2)
    with pytest.raises(NotImplementedError, match="does not run on the CPU"):
        suite.setup(counts, "triton")
    monkeypatch.setattr(bench.common, "count_launches", lambda modes: 1 / 0)
    failed = suite.setup_cache()
    with pytest.raises(NotImplementedError, match="^the launch count failed: division by zero$"):
        suite.setup(failed, "eager")


def test_the_fused_kernel_tracks_read_the_commits_report_or_skip_without_it(bench, monkeypatch):
    report = types.SimpleNamespace(instructions_per_step=120.0, registers=56, local_bytes=0)
    fake = types.ModuleType("detsim.track.gpu.kernel_report")
    fake.fused_kernel_report = lambda dtype: report if dtype == "float32" else 1 / 0
    monkeypatch.setitem(sys.modules, "detsim.track.gpu.kernel_report", fake)
    suite = bench.FusedKernel()
    reports = suite.setup_cache()
    suite.setup(reports, "float32")
    assert (suite.track_instructions_per_step(reports, "float32"), suite.track_registers(reports, "float32"),
            suite.track_local_bytes(reports, "float32")) == (120.0, 56, 0)
    with pytest.raises(NotImplementedError, match="^the kernel report failed: division by zero$"):
        suite.setup(reports, "float64")
    monkeypatch.setitem(sys.modules, "detsim.track.gpu.kernel_report", None)  # a commit without the report
    with pytest.raises(NotImplementedError, match="no compile-only kernel report"):
        suite.setup(suite.setup_cache(), "float32")


def test_every_track_is_in_a_device_cost_unit(bench):
    units = {getattr(getattr(cls, name), "unit") for cls in (bench.LaunchesPerRender, bench.FusedKernel)
             for name in dir(cls) if name.startswith("track_")}
    assert units == set(bench.costs.DEVICE_COST_UNITS)
