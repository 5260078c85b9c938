"""detsim.track.judge.bench: reading pytest-benchmark files and the gate's checks, the COST check on instruction
counts included."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from _tolerances import PARITY_MIN_R
from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.provenance import MachineClass
from detsim.track.measure.cost import not_measured_reason
from detsim.track.measure.cost import CostSpec, count_spec
from detsim.track.judge.bench import BaselineVerdict, Benchmark, GateInputError, GateLine, calibration_times, \
    cost_check, finding, hash_check, hash_facts, judge, load_results, parse_benchmark
from detsim.track.judge.finding import Finding
from detsim.track.judge.text import View, finding_line
from detsim.track.judge.thresholds import COST_THRESHOLD
from gate_files import AMD, BASELINE, COMMITTED, DATA, INTEL, SIMULATE, entry, flagged, simulate_entries, verdict_of, \
    write_variant


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


def test_planted_slowdown_names_each_benchmark_with_figures():
    verdict = verdict_of(DATA / "slower_2x.json")
    slower = flagged(verdict, "timing")
    assert set(slower) == {*SIMULATE, "suite[cpu]"}
    # old and new calibrated ratio, their ratio, the limit and the raw min times, in the verdict's words
    assert slower["test_simulate[p1_small-cpu-float32]"].startswith(
        "REGRESSED timing test_simulate[p1_small-cpu-float32]: 1.457 calibrations -> 2.482 calibrations, x1.70 "
        "(limit x1.50; min 14.9 ms -> 31.1 ms, calibration 10.2 ms -> 12.5 ms), against the baseline of 598b21f2")
    assert "x1.82 (limit x1.50; geometric mean over 4: " in slower["suite[cpu]"]
    assert all(f.is_verdict and f.label == "REGRESSED" for f in verdict.findings)
    assert not flagged(verdict, "parity") and not flagged(verdict, "determinism")
    assert verdict.exit == ExitCode.REGRESSED


def test_planted_parity_break_fails_naming_the_correlation():
    verdict = verdict_of(DATA / "parity_break.json")
    parity = flagged(verdict, "parity")
    assert set(parity) == set(SIMULATE)
    assert parity["test_simulate[phi_40steps-cpu-float64]"].startswith(
        "REGRESSED parity test_simulate[phi_40steps-cpu-float64]: r 1.000000000 -> 0.664137294 (below 0.9995 "
        "against j01_phi_osc_phisteps)")
    assert verdict.exit == 1


def test_planted_hash_change_is_a_changed_image_hash_with_parity_intact():
    verdict = verdict_of(DATA / "hash_change.json")
    changed = flagged(verdict, "determinism")
    assert set(changed) == set(SIMULATE)
    assert changed["test_simulate[p1_small-cpu-float64]"].startswith(
        "CHANGED image hash test_simulate[p1_small-cpu-float64]: e4382a406510da18 -> 262768ca4c3ac9a7 "
        f"(same machine class: cpu_class={INTEL}, device=cpu, dtype=float64, threads=1")
    assert {f.label for f in verdict.findings} == {"CHANGED"}
    assert verdict.exit == 1


def test_unchanged_run_compares_hashes_and_passes():
    verdict = verdict_of(DATA / "unchanged.json")
    passed = verdict.of("passed")
    assert set(SIMULATE) | {"suite[cpu]"} == set(passed) and not verdict.findings
    assert all(passed[name].endswith("; parity r 1.000000000; image hash unchanged") for name in SIMULATE)
    assert verdict.exit == ExitCode.OK


def test_one_slow_benchmark_beyond_its_own_threshold_fails(tmp_path):
    def slow_one(data):
        entry(data, SIMULATE[1])["stats"]["min"] *= 2.2
    verdict = verdict_of(write_variant(tmp_path, slow_one))
    assert set(flagged(verdict, "timing")) == {SIMULATE[1]}
    assert verdict.of("passed")["suite[cpu]"].startswith("timing x")


def test_missing_calibration_is_not_measured():
    verdict = verdict_of(DATA / "no_calibration.json")
    unmeasured = verdict.of("not measured")
    assert unmeasured["calibration[cpu]"] == "no calibration benchmark on cpu in the run"
    assert set(SIMULATE) <= set(unmeasured)
    assert verdict.exit == 2


def test_missing_benchmark_is_reported(tmp_path):
    def drop(data):
        data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] != SIMULATE[0]]
    verdict = verdict_of(write_variant(tmp_path, drop))
    assert set(verdict.of("not measured")) == {SIMULATE[0]}
    assert verdict.exit == 2


def test_gpu_benchmarks_missing_from_a_cpu_baseline_are_listed_not_gated(tmp_path):
    def add_cuda(data):
        for name in ("test_calibration[cpu]", SIMULATE[0]):
            extra = copy.deepcopy(entry(data, name))
            extra["fullname"] = extra["fullname"].replace("cpu", "cuda")
            extra["name"] = extra["name"].replace("cpu", "cuda")
            extra["extra_info"]["device"] = "cuda"
            data["benchmarks"].append(extra)
    verdict = verdict_of(write_variant(tmp_path, add_cuda))
    notes = verdict.of("note")
    assert {"calibration[cuda]", SIMULATE[0].replace("cpu", "cuda")} <= set(notes)
    assert "not in the baseline, not gated" in notes[SIMULATE[0].replace("cpu", "cuda")]
    assert verdict.exit == 0


def test_hashes_of_another_environment_are_not_compared(tmp_path):
    def other_torch(data):
        for entry in simulate_entries(data):
            entry["extra_info"]["torch"] = "2.14.0"
            entry["extra_info"]["sha256"] = "0" * 64
    verdict = verdict_of(write_variant(tmp_path, other_torch))
    note = verdict.of("note")["image hashes"]
    assert "not compared for 4 benchmark(s)," in note and "torch 2.13.0+cpu -> 2.14.0" in note
    assert not verdict.findings and verdict.exit == 0


def _recorded_on(cpu_class: str, sha256: str | None = None):
    def edit(data):
        for bench in data["benchmarks"]:
            bench["extra_info"]["cpu_class"] = cpu_class
            if sha256 is not None and "sha256" in bench["extra_info"]:
                bench["extra_info"]["sha256"] = sha256
    return edit


def test_an_intel_baseline_does_not_fail_an_amd_run_on_its_hashes(tmp_path):
    """The same device, dtype, threads, torch and CPU capability, but another CPU vendor: a different
    machine class, so different image bits are no finding; the note names the field and both values."""
    verdict = verdict_of(write_variant(tmp_path, _recorded_on(AMD, sha256="0" * 64)))
    assert not flagged(verdict, "determinism")
    notes = [line for line in verdict.lines if line.name == "image hashes"]
    assert notes == [GateLine("note", "image hashes", (  # one line for the whole run, never one per benchmark
        f"not compared for 4 benchmark(s), the machine class differs: cpu_class {INTEL} -> {AMD} (a fact, not a "
        "failure: the baseline holds no hashes of this run's machine class; `bash .ci/bench --refresh` on this "
        "class records them)"))]
    passed = verdict.of("passed")
    assert set(SIMULATE) <= set(passed) and not any("hash" in passed[name] for name in SIMULATE)  # no claim unchecked
    assert verdict.exit == ExitCode.OK


def test_an_amd_baseline_does_not_fail_an_intel_run_on_its_hashes(tmp_path):
    """The committed baseline is AMD-class now; an Intel runner is gated on time and parity only."""
    baseline = write_variant(tmp_path, _recorded_on(AMD), source="baseline.json", name="amd.json")
    verdict = verdict_of(write_variant(tmp_path, _recorded_on(INTEL, sha256="1" * 64)), baseline)
    assert not flagged(verdict, "determinism")
    assert f"cpu_class {AMD} -> {INTEL}" in verdict.of("note")["image hashes"]
    assert verdict.exit == ExitCode.OK


def test_a_baseline_without_a_machine_class_compares_no_hashes(tmp_path):
    def old_format(data):
        for bench in data["benchmarks"]:
            del bench["extra_info"]["cpu_class"]
    baseline = write_variant(tmp_path, old_format, source="baseline.json", name="old.json")
    verdict = verdict_of(DATA / "hash_change.json", baseline)
    assert not verdict.findings
    notes = verdict.of("note")
    assert "the baseline does not record its machine class" in notes["image hashes"]
    assert all("hash" not in text for text in verdict.of("passed").values())


def test_a_run_without_a_machine_class_compares_no_hashes():
    old = load_results(BASELINE)["test_bench_simulate.py::test_simulate[p1_small-cpu-float64]"]
    new = Benchmark(old.fullname, old.name, old.min_s, {k: v for k, v in old.extra.items() if k != "cpu_class"})
    assert hash_check(old, new) is None  # no claim on this benchmark's line
    [fact] = hash_facts([(old, new)])
    assert fact.kind == "note" and "not compared for 1 benchmark(s), the run does not record its machine class" \
        in fact.text


def test_a_baseline_without_hashes_has_no_hash_check():
    old = Benchmark("f", "f", 1.0, {"device": "cpu"})
    assert hash_check(old, old) is None


def test_non_finite_image_fails_parity(tmp_path):
    def nan_image(data):
        entry(data, SIMULATE[0])["extra_info"]["pearson_r"] = None
    parity = flagged(verdict_of(write_variant(tmp_path, nan_image)), "parity")
    assert "-> nan (None, not a number" in parity[SIMULATE[0]]


def test_a_much_faster_benchmark_passes_and_says_so(tmp_path):
    def fast_one(data):
        entry(data, SIMULATE[2])["stats"]["min"] /= 3
    passed = verdict_of(write_variant(tmp_path, fast_one)).of("passed")
    assert "faster than the baseline, refresh it to keep the gain" in passed[SIMULATE[2]]


def _finding(family: str) -> Finding:
    bench = Benchmark("f", "b", 1.0, {}, "a" * 40)
    return finding(bench, bench, family, 0.0, 1.0, old_sha256="0" * 64, new_sha256="1" * 64)


@pytest.mark.parametrize("kinds, families, code", [
    (["passed", "note"], [], ExitCode.OK),
    (["passed", "not measured"], [], ExitCode.UNMEASURED),
    (["not measured"], ["determinism"], ExitCode.UNMEASURED),
    (["passed"], ["timing", "parity"], ExitCode.REGRESSED),
    ([], ["parity"], ExitCode.REGRESSED),
])
def test_exit_code_unmeasured_wins_over_regressed_as_for_every_command(kinds, families, code):
    verdict = BaselineVerdict(tuple(map(_finding, families)), tuple(GateLine(k, "x", "") for k in kinds), 1)
    assert verdict.exit == code


def test_a_finding_line_is_the_verdicts_label_family_and_change_against_the_baseline():
    assert finding_line(_finding("determinism"), view=View.GATE) == (
        "CHANGED image hash b: 0000000000000000 -> 1111111111111111, against the baseline of aaaaaaaa")


def test_images_that_differ_between_rounds_are_nondeterministic_and_their_hash_is_not_compared(tmp_path):
    def vary(data):
        for b in simulate_entries(data):
            sha = b["extra_info"]["sha256"]
            b["extra_info"]["sha256_rounds"] = [sha, "f" * 64, sha] if b["name"].endswith("float64]") else [sha] * 3
            b["extra_info"]["sha256"] = "0" * 64  # would be a hash change; not judged where rounds differ

    verdict = verdict_of(write_variant(tmp_path, vary))
    varied = flagged(verdict, "reproducibility")
    assert set(varied) == {name for name in SIMULATE if name.endswith("float64]")}
    assert varied[SIMULATE[1]].startswith(f"NONDETERMINISTIC images of {SIMULATE[1]} differ between the 3 rounds "
                                          "of this run (2 distinct sha256: ")
    assert set(flagged(verdict, "determinism")) == {name for name in SIMULATE if name.endswith("float32]")}
    assert verdict.exit == 1


def test_a_run_whose_rounds_reproduce_says_so_and_still_compares_its_hash(tmp_path):
    def same(data):
        for b in simulate_entries(data):
            b["extra_info"]["sha256_rounds"] = [b["extra_info"]["sha256"]] * 4

    passed = verdict_of(write_variant(tmp_path, same)).of("passed")
    assert all(passed[name].endswith("; image reproduced in 4 rounds; image hash unchanged") for name in SIMULATE)


AVX2_INTEL = "x86_64 GenuineIntel AVX2"
CLASS = {"torch": "2.13.0", "threads": 1, "cpu_class": AVX2_INTEL, "dtype": "float64", "device": "cpu"}


def bench(instructions=None, role="simulate", **extra) -> Benchmark:
    info = {"role": role, **CLASS, **extra}
    if instructions is not None:
        info.update(instructions=instructions, instructions_workload="P1@64 cpu float64 eager")
    return Benchmark(fullname=f"f.py::{role}", name=role, min_s=0.01, extra=info)


def test_a_rise_over_the_threshold_is_a_cost_finding():
    finding = cost_check(bench(10_000_000), bench(10_210_000))
    assert isinstance(finding, Finding) and finding.series.family == "cost" and finding.label == "REGRESSED"
    assert "+2.10%" in finding.detail["evidence"] and "limit +2%" in finding.detail["evidence"]


def test_a_rise_within_the_threshold_and_a_fall_pass():
    assert cost_check(bench(10_000_000), bench(10_190_000)).startswith("cost 10,000,000 instructions -> 10,190,000")
    assert isinstance(cost_check(bench(10_000_000), bench(9_000_000)), str)


def test_no_count_on_either_side_is_not_checked():
    assert cost_check(bench(), bench()) is None
    never = "instructions not counted: the compiled path under valgrind takes minutes to compile"
    assert cost_check(bench(instructions_note=never), bench(instructions_note=never)) is None


def test_a_count_missing_on_one_side_is_a_note_with_the_reason():
    note = "instruction counts not measured: valgrind is not installed (Debian package `valgrind`)"
    run_side = cost_check(bench(10_000_000), bench(instructions_note=note))
    assert isinstance(run_side, GateLine) and run_side.kind == "note" and "valgrind" in run_side.text
    assert cost_check(bench(), bench(10_000_000)).kind == "note"


def test_counts_of_another_machine_class_or_region_are_not_compared():
    other = bench(20_000_000)
    other = Benchmark(other.fullname, other.name, other.min_s, {**other.extra, "cpu_class": "aarch64"})
    note = cost_check(bench(10_000_000), other)
    assert note.kind == "note" and "cpu_class" in note.text
    moved = bench(20_000_000)
    moved = Benchmark(moved.fullname, moved.name, moved.min_s, {**moved.extra, "instructions_workload": "P1@128"})
    assert cost_check(bench(10_000_000), moved).kind == "note"


def test_the_gate_fails_on_cost_alone():
    baseline = {"c": bench(1000, role="calibration"), "s": bench(10_000_000)}
    run = {"c": bench(1000, role="calibration"), "s": bench(10_500_000)}
    baseline = {b.fullname: b for b in baseline.values()}
    run = {b.fullname: b for b in run.values()}
    verdict = judge(baseline, run)
    assert [f.series.family for f in verdict.findings] == ["cost"]
    assert verdict.exit == 1


PLANT = 16_000  # elements of exp added to the region: +3.3 % of P1@64's 6.28 M instructions (6,280,576 -> 6,489,061 here)


# Three counts under valgrind (about 10 s of imports each): slow. Quick twins in the default run: the COST
# check on given counts (above), the plant joining the measured region only when asked
# (tests/track/base/test_base_callgrind.py) and a real count of a small region (tests/track/measure/test_measure_cost.py).
@pytest.mark.slow
@pytest.mark.skipif(not_measured_reason() is not None, reason=str(not_measured_reason()))
def test_a_planted_three_percent_is_flagged_and_a_recount_is_not(tmp_path):
    spec = CostSpec("P1@64")
    first, again = (count_spec(spec, out_dir=tmp_path, keep=False).instructions for _ in range(2))
    planted = count_spec(spec, out_dir=tmp_path, keep=False, env={"DETSIM_COST_PLANT": str(PLANT)}).instructions
    assert 0.025 < planted / first - 1 < 0.04  # the plant costs about 3 %
    assert abs(again / first - 1) < COST_THRESHOLD / 4  # counts repeat far inside the threshold
    assert isinstance(cost_check(bench(first), bench(again)), str)  # passed
    assert isinstance(cost_check(bench(first), bench(planted)), Finding)


@pytest.fixture
def bench_conftest():
    """bench/conftest.py as a plain module (its hooks are not registered here)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "bench" / "conftest.py"
    spec = importlib.util.spec_from_file_location("bench_conftest_cost", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


class _Recorder:
    def __init__(self):
        self.extra_info = {}


def test_bench_records_why_a_count_is_missing_in_one_line(bench_conftest, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    recorder = _Recorder()
    bench_conftest.record_instructions(recorder, "P1@128 cpu float64 eager", spec=CostSpec("P1@128"))
    note = recorder.extra_info["instructions_note"]
    assert "instructions" not in recorder.extra_info and "`valgrind`" in note and "\n" not in note
    assert cost_check(bench(10_000_000), bench(instructions_note=note)).kind == "note"


def test_bench_counts_can_be_switched_off(bench_conftest, monkeypatch):
    monkeypatch.setenv("DETSIM_BENCH_COUNT", "0")
    recorder = _Recorder()
    bench_conftest.record_instructions(recorder, "x", "x = 1", "x")
    assert recorder.extra_info == {"instructions_note": "instruction counts not measured: DETSIM_BENCH_COUNT=0"}
