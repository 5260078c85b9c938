"""Instruction counts reused between commits (``benchmarks/counts.py``): a count is reused only for the same
counted bytes and environment, and anything the count depends on makes it count again."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]

WORKLOADS = ["P1@64", "g01_hkl_nointerp"]


@pytest.fixture(scope="module")
def counts():
    """The module, imported as asv imports it (the suite pins torch to one thread: undone)."""
    threads = torch.get_num_threads()
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("benchmarks.counts")
    finally:
        sys.path.remove(str(ROOT))
        torch.set_num_threads(threads)


@pytest.fixture
def simulator(tmp_path):
    """A stand-in installed simulator: two core modules and the tracking suite's sub-package."""
    package = tmp_path / "site" / "detsim"
    (package / "track").mkdir(parents=True)
    (package / "engine.py").write_text("RATE = 1\n")
    (package / "__init__.py").write_text("")
    (package / "track" / "verdict.py").write_text("LINES = 1\n")
    return package


class Counter:
    """A count that records how often it ran and gives a new total each time (as a changed code would)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, counted):
        self.calls += 1
        return {w: 1000 * self.calls + i for i, w in enumerate(counted)}


def test_a_count_is_made_once_and_reused_with_the_commit_it_was_made_at(counts, simulator, tmp_path, monkeypatch):
    monkeypatch.setenv(counts.COMMIT_VAR, "a" * 40)
    count = Counter()
    first, provenance = counts.reuse_or_count(WORKLOADS, count, tmp_path / "cache", simulator=simulator)
    assert provenance is None and count.calls == 1
    monkeypatch.setenv(counts.COMMIT_VAR, "b" * 40)
    again, provenance = counts.reuse_or_count(WORKLOADS, count, tmp_path / "cache", simulator=simulator)
    assert again == first and count.calls == 1 and provenance == f"reused from {'a' * 40}"
    [stored] = (tmp_path / "cache").iterdir()
    assert json.loads(stored.read_text()) == {"counts": first, "counted_at": "a" * 40}


def test_a_changed_simulator_file_is_counted_again_and_a_changed_suite_file_is_not(counts, simulator):
    before = counts.key(WORKLOADS, simulator=simulator)
    (simulator / "track" / "verdict.py").write_text("LINES = 2\n")
    (simulator / "track" / "__pycache__").mkdir()
    (simulator / "track" / "__pycache__" / "verdict.cpython-311.pyc").write_bytes(b"\0")
    assert counts.key(WORKLOADS, simulator=simulator) == before
    (simulator / "engine.py").write_text("RATE = 2\n")
    assert counts.key(WORKLOADS, simulator=simulator) != before
    (simulator / "engine.py").write_text("RATE = 1\n")
    (simulator / "new_module.py").write_text("")
    assert counts.key(WORKLOADS, simulator=simulator) != before


def test_the_workloads_the_dtype_and_the_counts_environment_are_part_of_the_key(counts, simulator, monkeypatch):
    for name in (counts.common.callgrind.PLANT_VAR, "MKL_ENABLE_INSTRUCTIONS", "PYTHONUNBUFFERED"):
        monkeypatch.delenv(name, raising=False)
    before = counts.key(WORKLOADS, simulator=simulator)
    assert counts.key(WORKLOADS[:1], simulator=simulator) != before
    assert counts.key(WORKLOADS, "float32", simulator=simulator) != before
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the count pins it to one thread
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # chooses no kernel
    assert counts.key(WORKLOADS, simulator=simulator) == before
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")  # picks other kernels
    assert counts.key(WORKLOADS, simulator=simulator) != before
    monkeypatch.delenv("MKL_ENABLE_INSTRUCTIONS")
    monkeypatch.setenv(counts.common.callgrind.PLANT_VAR, "200000")
    assert counts.key(WORKLOADS, simulator=simulator) != before


def test_the_key_covers_the_installed_packages(counts, simulator, monkeypatch):
    before = counts.key(WORKLOADS, simulator=simulator)
    environment = counts._environment()
    monkeypatch.setattr(counts, "_environment", lambda: {**environment, "packages": "torch==9.9.9"})
    assert counts.key(WORKLOADS, simulator=simulator) != before


@pytest.mark.parametrize("stored", ["{not json", '{"counts": {"P1@64": "many"}}', '{"counted_at": null}'])
def test_a_stored_count_that_is_not_one_is_counted_again_and_replaced(counts, simulator, tmp_path, monkeypatch,
                                                                     stored):
    monkeypatch.delenv(counts.COMMIT_VAR, raising=False)
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / f"{counts.key(WORKLOADS, simulator=simulator)}.json").write_text(stored)
    count = Counter()
    found, provenance = counts.reuse_or_count(WORKLOADS, count, folder, simulator=simulator)
    assert provenance is None and count.calls == 1
    again = counts.reuse_or_count(WORKLOADS, count, folder, simulator=simulator)
    assert again == (found, "reused from an earlier count")
    assert [p.suffix for p in folder.iterdir()] == [".json"]  # no temporary file left


def test_the_installed_simulator_is_the_package_a_count_imports(counts):
    import detsim

    assert counts.installed_simulator() == Path(detsim.__file__).parent


def test_the_asv_benchmark_counts_a_commit_once_and_then_reuses_its_counts(counts, simulator, tmp_path, monkeypatch):
    bench_cost = importlib.import_module("benchmarks.bench_cost")
    count = Counter()
    monkeypatch.setattr(counts.common.callgrind, "not_measured_reason", lambda: None)
    monkeypatch.setattr(counts.common, "count_instructions_many", count)
    monkeypatch.setattr(counts, "FOLDER", tmp_path / "cache")
    monkeypatch.setattr(counts, "installed_simulator", lambda: simulator)
    monkeypatch.setenv(counts.COMMIT_VAR, "c" * 40)
    first = bench_cost.InstructionCounts().setup_cache()
    assert count.calls == 1 and set(first) == set(bench_cost.COUNTED)
    assert bench_cost.InstructionCounts().setup_cache() == first and count.calls == 1
    [stored] = (tmp_path / "cache").iterdir()
    assert json.loads(stored.read_text())["counted_at"] == "c" * 40  # where a reused count was made
