"""detsim.track.gate.checks: the gate's time, parity and hash rules on committed run files."""

from __future__ import annotations

import copy

import pytest

from _tolerances import PARITY_MIN_R
from detsim.track.base.exitcodes import ExitCode
from detsim.track.gate import checks
from detsim.track.gate.checks import Finding, Status, exit_code, hash_facts, hash_finding
from detsim.track.gate.results import Benchmark, load_results
from gate_files import AMD, BASELINE, DATA, INTEL, SIMULATE, entry, findings_of, simulate_entries, with_status, \
    write_variant


def test_parity_threshold_is_the_test_suites():
    assert checks.PARITY_MIN_R == PARITY_MIN_R


def test_planted_slowdown_names_each_benchmark_with_figures():
    findings = findings_of(DATA / "slower_2x.json")
    slower = with_status(findings, "slower")
    assert set(slower) == {*SIMULATE, "suite[cpu]"}
    # old and new calibrated ratio, their ratio, and the raw min times
    assert "time/calibration 1.457 -> 2.482 (x1.70, limit x1.50)" in slower["test_simulate[p1_small-cpu-float32]"]
    assert "min 14.90 ms -> 31.07 ms" in slower["test_simulate[p1_small-cpu-float32]"]
    assert "x1.82 (limit x1.50)" in slower["suite[cpu]"]
    assert not with_status(findings, "parity") and not with_status(findings, "hash")
    assert exit_code(findings) == ExitCode.REGRESSED


def test_planted_parity_break_fails_naming_the_correlation():
    findings = findings_of(DATA / "parity_break.json")
    parity = with_status(findings, "parity")
    assert set(parity) == set(SIMULATE)
    message = parity["test_simulate[phi_40steps-cpu-float64]"]
    assert message.startswith("Pearson r 1.00000000 -> 0.66413729 (below 0.9995)")
    assert "j01_phi_osc_phisteps" in message
    assert exit_code(findings) == 1


def test_planted_hash_change_fails_with_parity_intact():
    findings = findings_of(DATA / "hash_change.json")
    changed = with_status(findings, "hash")
    assert set(changed) == set(SIMULATE)
    message = changed["test_simulate[p1_small-cpu-float64]"]
    assert message.startswith("image sha256 e4382a406510da18... -> 262768ca4c3ac9a7...")
    assert f"same machine class: cpu_class={INTEL}, device=cpu, dtype=float64, threads=1" in message
    assert not with_status(findings, "parity") and not with_status(findings, "slower")
    assert exit_code(findings) == 1


def test_unchanged_run_compares_hashes_and_passes():
    findings = findings_of(DATA / "unchanged.json")
    ok = with_status(findings, "ok")
    assert set(SIMULATE) | {"suite[cpu]"} == set(ok)
    assert all(ok[name].endswith("; image sha256 unchanged") for name in SIMULATE)
    assert exit_code(findings) == ExitCode.OK


def test_one_slow_benchmark_beyond_its_own_threshold_fails(tmp_path):
    def slow_one(data):
        entry(data, SIMULATE[1])["stats"]["min"] *= 2.2
    findings = findings_of(write_variant(tmp_path, slow_one))
    assert set(with_status(findings, "slower")) == {SIMULATE[1]}
    assert with_status(findings, "ok")["suite[cpu]"].startswith("geometric mean")


def test_missing_calibration_is_unmeasured():
    findings = findings_of(DATA / "no_calibration.json")
    unmeasured = with_status(findings, "unmeasured")
    assert unmeasured["calibration[cpu]"] == "no calibration benchmark on cpu in the run"
    assert set(SIMULATE) <= set(unmeasured)
    assert exit_code(findings) == 2


def test_missing_benchmark_is_reported(tmp_path):
    def drop(data):
        data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] != SIMULATE[0]]
    findings = findings_of(write_variant(tmp_path, drop))
    assert set(with_status(findings, "missing")) == {SIMULATE[0]}
    assert exit_code(findings) == 2


def test_gpu_benchmarks_missing_from_a_cpu_baseline_are_listed_not_gated(tmp_path):
    def add_cuda(data):
        for name in ("test_calibration[cpu]", SIMULATE[0]):
            extra = copy.deepcopy(entry(data, name))
            extra["fullname"] = extra["fullname"].replace("cpu", "cuda")
            extra["name"] = extra["name"].replace("cpu", "cuda")
            extra["extra_info"]["device"] = "cuda"
            data["benchmarks"].append(extra)
    findings = findings_of(write_variant(tmp_path, add_cuda))
    assert set(with_status(findings, "new")) == {"calibration[cuda]", SIMULATE[0].replace("cpu", "cuda")}
    assert exit_code(findings) == 0


def test_hashes_of_another_environment_are_not_compared(tmp_path):
    def other_torch(data):
        for entry in simulate_entries(data):
            entry["extra_info"]["torch"] = "2.14.0"
            entry["extra_info"]["sha256"] = "0" * 64
    findings = findings_of(write_variant(tmp_path, other_torch))
    notes = with_status(findings, "note")
    assert set(notes) == {"image hashes"}
    assert "not compared for 4 benchmark(s)," in notes["image hashes"]
    assert "torch 2.13.0+cpu -> 2.14.0" in notes["image hashes"]
    assert exit_code(findings) == 0


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
    run = write_variant(tmp_path, _recorded_on(AMD, sha256="0" * 64))
    findings = findings_of(run)
    assert not with_status(findings, "hash")
    notes = [f for f in findings if f.status == Status.NOTE]
    assert [f.line() for f in notes] == [  # one line for the whole run, never one per benchmark
        f"NOTE       image hashes: not compared for 4 benchmark(s), the machine class differs: cpu_class {INTEL} "
        f"-> {AMD} (a fact, not a failure: the baseline holds no hashes of this run's machine class; "
        "`bash .ci/bench --refresh` on this class records them)"]
    ok = with_status(findings, "ok")
    assert set(SIMULATE) <= set(ok) and not any("sha256" in ok[name] for name in SIMULATE)  # no claim it did not check
    assert exit_code(findings) == ExitCode.OK


def test_an_amd_baseline_does_not_fail_an_intel_run_on_its_hashes(tmp_path):
    """The committed baseline is AMD-class now; an Intel runner is gated on time and parity only."""
    baseline = write_variant(tmp_path, _recorded_on(AMD), source="baseline.json", name="amd.json")
    run = write_variant(tmp_path, _recorded_on(INTEL, sha256="1" * 64))
    findings = findings_of(run, baseline)
    assert not with_status(findings, "hash")
    assert f"cpu_class {AMD} -> {INTEL}" in with_status(findings, "note")["image hashes"]
    assert exit_code(findings) == ExitCode.OK


def test_a_baseline_without_a_machine_class_compares_no_hashes(tmp_path):
    def old_format(data):
        for bench in data["benchmarks"]:
            del bench["extra_info"]["cpu_class"]
    baseline = write_variant(tmp_path, old_format, source="baseline.json", name="old.json")
    findings = findings_of(DATA / "hash_change.json", baseline)
    assert not with_status(findings, "hash")
    notes = with_status(findings, "note")
    assert set(notes) == {"image hashes"}
    assert "the baseline does not record its machine class" in notes["image hashes"]
    assert all("same machine class" not in f.message and "sha256 unchanged" not in f.message for f in findings)


def test_a_run_without_a_machine_class_compares_no_hashes():
    old = load_results(BASELINE)["test_bench_simulate.py::test_simulate[p1_small-cpu-float64]"]
    new = Benchmark(old.fullname, old.name, old.min_s, {k: v for k, v in old.extra.items() if k != "cpu_class"})
    assert hash_finding(old, new) is None  # no claim on this benchmark's line
    [fact] = hash_facts([(old, new)])
    assert fact.status == Status.NOTE and "not compared for 1 benchmark(s), the run does not record its machine class" \
        in fact.message


def test_a_baseline_without_hashes_has_no_hash_finding():
    old = Benchmark("f", "f", 1.0, {"device": "cpu"})
    assert hash_finding(old, old) is None


def test_non_finite_image_fails_parity(tmp_path):
    def nan_image(data):
        entry(data, SIMULATE[0])["extra_info"]["pearson_r"] = None
    parity = with_status(findings_of(write_variant(tmp_path, nan_image)), "parity")
    assert "-> None (not a number" in parity[SIMULATE[0]]


def test_a_much_faster_benchmark_passes_and_says_so(tmp_path):
    def fast_one(data):
        entry(data, SIMULATE[2])["stats"]["min"] /= 3
    ok = with_status(findings_of(write_variant(tmp_path, fast_one)), "ok")
    assert "faster than the baseline, refresh it to keep the gain" in ok[SIMULATE[2]]


@pytest.mark.parametrize("statuses, code", [
    (["ok", "note", "new", "info"], ExitCode.OK),
    (["ok", "missing"], ExitCode.UNMEASURED),
    (["unmeasured", "hash"], ExitCode.REGRESSED),
    (["slower"], ExitCode.REGRESSED),
    (["parity", "missing"], ExitCode.REGRESSED),
])
def test_exit_code_regressed_wins_over_unmeasured(statuses, code):
    assert exit_code([Finding(Status(s), "x", "") for s in statuses]) == code


def test_a_finding_line_is_its_upper_case_status_padded():
    assert Finding(Status.HASH, "b", "m").line() == "HASH       b: m"


def test_images_that_differ_between_rounds_are_nondeterministic_and_their_hash_is_not_compared(tmp_path):
    def vary(data):
        for b in simulate_entries(data):
            sha = b["extra_info"]["sha256"]
            b["extra_info"]["sha256_rounds"] = [sha, "f" * 64, sha] if b["name"].endswith("float64]") else [sha] * 3
            b["extra_info"]["sha256"] = "0" * 64  # would be a hash change; not judged where rounds differ

    findings = findings_of(write_variant(tmp_path, vary))
    varied = with_status(findings, "nondeterministic")
    assert set(varied) == {name for name in SIMULATE if name.endswith("float64]")}
    assert varied[SIMULATE[1]].startswith("the image of one input differs between the 3 rounds of this run "
                                          "(2 distinct sha256: ")
    assert set(with_status(findings, "hash")) == {name for name in SIMULATE if name.endswith("float32]")}
    assert exit_code(findings) == 1
    line = next(f for f in findings if f.status == "nondeterministic").line()
    assert line.startswith("NONDETERMINISTIC test_simulate[")


def test_a_run_whose_rounds_reproduce_says_so_and_still_compares_its_hash(tmp_path):
    def same(data):
        for b in simulate_entries(data):
            b["extra_info"]["sha256_rounds"] = [b["extra_info"]["sha256"]] * 4

    ok = with_status(findings_of(write_variant(tmp_path, same)), "ok")
    assert all(ok[name].endswith("; image reproduced in 4 rounds; image sha256 unchanged") for name in SIMULATE)
