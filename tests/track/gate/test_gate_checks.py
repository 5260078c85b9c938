"""detsim.track.gate.checks: the gate's time, parity, hash and reproducibility rules on committed run files,
judged into the verdict's finding type and printed in its words."""

from __future__ import annotations

import copy

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.gate.checks import BaselineVerdict, GateLine, finding, finding_line, hash_check, hash_facts
from detsim.track.gate.results import Benchmark, load_results
from detsim.track.verdict.finding import Finding
from gate_files import AMD, BASELINE, DATA, INTEL, SIMULATE, entry, flagged, simulate_entries, verdict_of, \
    write_variant


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
    (["not measured"], ["determinism"], ExitCode.REGRESSED),
    ([], ["parity"], ExitCode.REGRESSED),
])
def test_exit_code_regressed_wins_over_unmeasured(kinds, families, code):
    verdict = BaselineVerdict(tuple(map(_finding, families)), tuple(GateLine(k, "x", "") for k in kinds), 1)
    assert verdict.exit == code


def test_a_finding_line_is_the_verdicts_label_family_and_change_against_the_baseline():
    assert finding_line(_finding("determinism")) == ("CHANGED image hash b: 0000000000000000 -> 1111111111111111, "
                                                     "against the baseline of aaaaaaaa")


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
