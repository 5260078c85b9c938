"""detsim.track.gate.results: pytest-benchmark files as frozen Benchmark records."""

from __future__ import annotations

import dataclasses
import json

import pytest

from _tolerances import PARITY_MIN_R
from detsim.track.base.provenance import MachineClass
from detsim.track.gate.checks import judge
from detsim.track.gate.results import Benchmark, GateInputError, calibration_times, load_results, parse_benchmark
from gate_files import BASELINE, COMMITTED, INTEL, SIMULATE


def test_committed_baseline_is_complete():
    baseline = load_results(COMMITTED)
    assert "cpu" in calibration_times(baseline)
    simulated = [b for b in baseline.values() if b.extra.get("role") == "simulate"]
    assert {b.extra["workload"] for b in simulated} == {"p1_small", "phi_40steps"}
    for bench in simulated:
        assert bench.extra["pearson_r"] >= PARITY_MIN_R and len(bench.extra["sha256"]) == 64
        assert bench.extra["threads"] == 1
    assert judge(baseline, baseline).exit == 0


def test_committed_baseline_records_its_machine_class_so_hashes_are_compared():
    baseline = load_results(COMMITTED)
    assert all(b.machine_class is not None for b in baseline.values())
    paths = {b.extra["workload"] for b in baseline.values() if b.extra.get("role") == "path"}
    assert paths == {"P1", "P2@256", "P4096"}  # a reduced size says so in its name
    verdict = judge(baseline, baseline)
    rendering = {b.name for b in baseline.values() if b.name.startswith(("test_simulate[", "test_path["))}
    assert rendering and set(verdict.of("passed")) >= rendering and not verdict.findings
    assert all(verdict.of("passed")[name].endswith("image hash unchanged") for name in rendering)


def test_benchmarks_are_keyed_by_full_name_with_their_min_and_extra_info():
    results = load_results(BASELINE)
    assert len(results) == 5
    bench = results["test_bench_simulate.py::test_simulate[p1_small-cpu-float64]"]
    assert bench.name == SIMULATE[1] and bench.min_s == 0.016669161999999904
    assert bench.extra["case"] == "g01_hkl_nointerp" and not bench.is_calibration and bench.device == "cpu"
    assert bench.commit == "598b21f2d8e9048c29aafb02ee6cba38441e288d"  # the file's commit_info.id
    with pytest.raises(dataclasses.FrozenInstanceError):
        bench.min_s = 1.0


def test_the_machine_class_is_read_from_extra_info():
    bench = load_results(BASELINE)["test_bench_simulate.py::test_simulate[p1_small-cpu-float32]"]
    assert bench.machine_class == MachineClass(cpu_class=INTEL, torch="2.13.0+cpu", threads=1,
                                               dtype="float32", device="cpu")


def test_a_record_without_a_machine_class_has_none():
    old = Benchmark("f", "f", 1.0, {"device": "cpu", "dtype": "float64", "threads": 1, "torch": "2.13.0",
                                    "cpu_capability": "AVX512"})
    assert old.machine_class is None


def test_calibration_time_is_the_smallest_per_device():
    def calibration(name, device, seconds):
        return Benchmark(name, name, seconds, {"role": "calibration", "device": device})
    results = {b.fullname: b for b in (calibration("a", "cpu", 0.02), calibration("b", "cpu", 0.01),
                                       calibration("c", "cuda", 0.5),
                                       Benchmark("d", "d", 0.001, {"role": "simulate"}))}
    assert calibration_times(results) == {"cpu": 0.01, "cuda": 0.5}


@pytest.mark.parametrize("entry", [
    "not a dict",
    {"stats": {"min": 1.0}},
    {"fullname": "x", "stats": {"min": -1.0}},
    {"fullname": "x", "stats": {"min": True}},
    {"fullname": "x", "stats": {"min": 1.0}, "extra_info": []},
])
def test_entries_without_what_the_gate_needs_are_rejected(entry):
    assert parse_benchmark(entry) is None


def test_a_benchmark_named_twice_is_an_error(tmp_path):
    record = {"fullname": "x", "stats": {"min": 1.0}, "extra_info": {}}
    path = tmp_path / "twice.json"
    path.write_text(json.dumps({"benchmarks": [record, record]}))
    with pytest.raises(GateInputError, match="benchmark x appears twice"):
        load_results(path)
    path.write_text(json.dumps({"benchmarks": [record], "commit_info": {"id": None}}))
    assert load_results(path)["x"].commit == ""  # no commit recorded: none claimed


def test_an_unreadable_file_is_named(tmp_path):
    with pytest.raises(GateInputError, match="nowhere.json: cannot read it"):
        load_results(tmp_path / "nowhere.json")


@pytest.mark.parametrize("r", [2.0, -1.5, 1.0000001])
def test_an_impossible_pearson_r_is_refused_naming_the_file_and_field(tmp_path, r):
    path = tmp_path / "run.json"
    record = {"fullname": "x", "stats": {"min": 1.0}, "extra_info": {"pearson_r": r}}
    path.write_text(json.dumps({"benchmarks": [record]}))
    with pytest.raises(GateInputError, match=r"run.json: benchmarks\[0\] \(x\): extra_info.pearson_r = .* impossible"):
        load_results(path)
    record["extra_info"]["pearson_r"] = 1.0  # the bounds themselves are possible
    path.write_text(json.dumps({"benchmarks": [record]}))
    assert load_results(path)["x"].extra["pearson_r"] == 1.0
