"""detsim-track bench-gate against committed pytest-benchmark results (tests/data/bench/).

The files are real ``pytest bench --benchmark-json`` outputs (CPU flags trimmed): a baseline, an
unchanged re-run, and runs with each planted fault of bench/conftest.py (2x slowdown, parity break,
one-ulp image change), plus a truncated file and a run without its calibration benchmark.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import pytest

from _tolerances import PARITY_MIN_R
from detsim.track.gate import cmd_bench_gate as benchgate
from detsim.track.cli import main as track_main

DATA = Path(__file__).parent / "data" / "bench"
COMMITTED = Path(__file__).resolve().parents[1] / "results" / "baselines" / "pytest-baseline.json"
BASELINE = DATA / "baseline.json"
SIMULATE = [
    "test_simulate[p1_small-cpu-float32]", "test_simulate[p1_small-cpu-float64]",
    "test_simulate[phi_40steps-cpu-float32]", "test_simulate[phi_40steps-cpu-float64]",
]


def run_gate(results: Path, baseline: Path = BASELINE, *extra: str) -> int:
    parser = argparse.ArgumentParser()
    benchgate.add_arguments(parser)
    return benchgate.run(parser.parse_args([str(results), "--baseline", str(baseline), *extra]))


def findings_of(results: Path, **kwargs) -> list[benchgate.Finding]:
    return benchgate.gate(benchgate.load_results(BASELINE), benchgate.load_results(results), **kwargs)


def with_status(findings, status) -> dict[str, str]:
    return {f.name: f.message for f in findings if f.status == status}


def write_variant(tmp_path: Path, edit) -> Path:
    """A copy of unchanged.json changed by ``edit(data)``."""
    data = json.loads((DATA / "unchanged.json").read_text())
    edit(data)
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(data))
    return path


def simulate_entries(data) -> list[dict]:
    return [b for b in data["benchmarks"] if b["extra_info"]["role"] == "simulate"]


def entry(data, name) -> dict:
    return next(b for b in data["benchmarks"] if b["name"] == name)


def test_parity_threshold_is_the_test_suites():
    assert benchgate.PARITY_MIN_R == PARITY_MIN_R


def test_committed_baseline_is_complete():
    baseline = benchgate.load_results(COMMITTED)
    assert "cpu" in benchgate.calibration_times(baseline)
    simulated = [b for b in baseline.values() if b.extra.get("role") == "simulate"]
    assert {b.extra["workload"] for b in simulated} == {"p1_small", "phi_40steps"}
    for bench in simulated:
        assert bench.extra["pearson_r"] >= PARITY_MIN_R and len(bench.extra["sha256"]) == 64
        assert bench.extra["threads"] == 1
    assert benchgate.exit_code(benchgate.gate(baseline, baseline)) == 0


def test_unchanged_run_passes(capsys):
    assert run_gate(DATA / "unchanged.json") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("bench-gate: passed (4 benchmarks gated")
    for name in SIMULATE:
        assert f"OK         {name}: time/calibration" in out
    assert "image sha256 unchanged" in out


def test_planted_slowdown_fails_naming_each_benchmark_with_figures(capsys):
    assert run_gate(DATA / "slower_2x.json") == 1
    findings = findings_of(DATA / "slower_2x.json")
    slower = with_status(findings, "slower")
    assert set(slower) == {*SIMULATE, "suite[cpu]"}
    # old and new calibrated ratio, their ratio, and the raw min times
    assert "time/calibration 1.457 -> 2.482 (x1.70, limit x1.50)" in slower["test_simulate[p1_small-cpu-float32]"]
    assert "min 14.90 ms -> 31.07 ms" in slower["test_simulate[p1_small-cpu-float32]"]
    assert "x1.82 (limit x1.50)" in slower["suite[cpu]"]
    assert not with_status(findings, "parity") and not with_status(findings, "hash")
    assert "bench-gate: FAILED" in capsys.readouterr().out


def test_planted_parity_break_fails_naming_the_correlation():
    findings = findings_of(DATA / "parity_break.json")
    parity = with_status(findings, "parity")
    assert set(parity) == set(SIMULATE)
    message = parity["test_simulate[phi_40steps-cpu-float64]"]
    assert message.startswith("Pearson r 1.00000000 -> 0.66413729 (below 0.9995)")
    assert "j01_phi_osc_phisteps" in message
    assert benchgate.exit_code(findings) == 1


def test_planted_hash_change_fails_with_parity_intact():
    findings = findings_of(DATA / "hash_change.json")
    changed = with_status(findings, "hash")
    assert set(changed) == set(SIMULATE)
    message = changed["test_simulate[p1_small-cpu-float64]"]
    assert message.startswith("image sha256 e4382a406510da18... -> 262768ca4c3ac9a7...")
    assert not with_status(findings, "parity") and not with_status(findings, "slower")
    assert benchgate.exit_code(findings) == 1


def test_one_slow_benchmark_beyond_its_own_threshold_fails(tmp_path):
    def slow_one(data):
        entry(data, SIMULATE[1])["stats"]["min"] *= 2.2
    findings = findings_of(write_variant(tmp_path, slow_one))
    assert set(with_status(findings, "slower")) == {SIMULATE[1]}
    assert with_status(findings, "ok")["suite[cpu]"].startswith("geometric mean")


def test_corrupt_file_is_one_line_naming_it(capsys):
    assert run_gate(DATA / "corrupt.json") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(DATA / "corrupt.json") in err and "not valid JSON" in err


@pytest.mark.parametrize("text, problem", [
    ('{"benchmarks": [{"fullname": "x", "stats": {"min": NaN}, "extra_info": {}}]}', "not valid JSON"),
    ("[]", "not a pytest-benchmark JSON file"),
    ('{"benchmarks": [{"fullname": "x", "stats": {"min": 0}}]}', "benchmarks[0] lacks"),
])
def test_malformed_results_are_named(tmp_path, capsys, text, problem):
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert run_gate(path) == 2
    err = capsys.readouterr().err
    assert f"bench-gate: {path}: " in err and problem in err


def test_missing_file_is_named(tmp_path, capsys):
    assert run_gate(DATA / "unchanged.json", tmp_path / "nowhere.json") == 2
    assert f"{tmp_path / 'nowhere.json'}: cannot read it" in capsys.readouterr().err


def test_missing_calibration_is_unmeasured():
    findings = findings_of(DATA / "no_calibration.json")
    unmeasured = with_status(findings, "unmeasured")
    assert unmeasured["calibration[cpu]"] == "no calibration benchmark on cpu in the run"
    assert set(SIMULATE) <= set(unmeasured)
    assert benchgate.exit_code(findings) == 2


def test_missing_benchmark_is_reported(tmp_path):
    def drop(data):
        data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] != SIMULATE[0]]
    findings = findings_of(write_variant(tmp_path, drop))
    assert set(with_status(findings, "missing")) == {SIMULATE[0]}
    assert benchgate.exit_code(findings) == 2


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
    assert benchgate.exit_code(findings) == 0


def test_hashes_of_another_environment_are_not_compared(tmp_path):
    def other_torch(data):
        for entry in simulate_entries(data):
            entry["extra_info"]["torch"] = "2.14.0"
            entry["extra_info"]["sha256"] = "0" * 64
    findings = findings_of(write_variant(tmp_path, other_torch))
    notes = with_status(findings, "note")
    assert set(notes) == set(SIMULATE)
    assert "torch 2.13.0+cpu -> 2.14.0" in notes[SIMULATE[0]]
    assert benchgate.exit_code(findings) == 0


def test_non_finite_image_fails_parity(tmp_path):
    def nan_image(data):
        entry(data, SIMULATE[0])["extra_info"]["pearson_r"] = None
    parity = with_status(findings_of(write_variant(tmp_path, nan_image)), "parity")
    assert "-> None (not a number" in parity[SIMULATE[0]]


def test_thresholds_accept_percentages(capsys):
    assert run_gate(DATA / "slower_2x.json", BASELINE, "--threshold", "150%", "--suite-threshold", "1.5") == 0
    assert "+150% per benchmark, +150% suite mean" in capsys.readouterr().out


def test_reachable_through_detsim_track(capsys):
    assert track_main(["bench-gate", str(DATA / "unchanged.json"), "--baseline", str(BASELINE)]) == 0
    assert "bench-gate: passed" in capsys.readouterr().out
