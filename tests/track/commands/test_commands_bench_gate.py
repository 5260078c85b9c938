"""detsim-track bench-gate: its command line, printed lines, verdict and exit codes."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.cli import main as track_main
from detsim.track.commands import bench_gate as benchgate
from gate_files import AMD, BASELINE, DATA, INTEL, SIMULATE, write_variant


def run_gate(results: Path, baseline: Path = BASELINE, *extra: str) -> int:
    parser = argparse.ArgumentParser()
    benchgate.add_arguments(parser)
    return benchgate.run(parser.parse_args([str(results), "--baseline", str(baseline), *extra]))


def test_unchanged_run_passes(capsys):
    assert run_gate(DATA / "unchanged.json") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "summary: nothing to act on; 4 benchmarks gated; exit 0"
    assert "(limits: timing +75% per benchmark, +50% suite mean, in calibrations; parity r >= 0.9995; cost +2%;" \
        in out.splitlines()[0]  # the thresholds table's bench rows are the defaults
    for name in SIMULATE:
        assert f"passed {name}: timing " in out
    assert "image hash unchanged" in out


def test_planted_slowdown_fails_naming_each_benchmark_with_figures(capsys):
    assert run_gate(DATA / "slower_2x.json") == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "summary: 5 regressed; 4 benchmarks gated; exit 1"
    assert "REGRESSED timing test_simulate[p1_small-cpu-float32]: 1.457 calibrations -> 2.482 calibrations, x1.70" in out


def test_an_amd_run_against_an_intel_baseline_passes_with_notes(tmp_path, capsys):
    def amd(data):
        for bench in data["benchmarks"]:
            bench["extra_info"]["cpu_class"] = AMD
            bench["extra_info"]["sha256"] = "0" * 64
    assert run_gate(write_variant(tmp_path, amd)) == ExitCode.OK
    out = capsys.readouterr().out
    assert "CHANGED" not in out and "same machine class" not in out
    assert f"note: image hashes: not compared for 4 benchmark(s), the machine class differs: " \
           f"cpu_class {INTEL} -> {AMD} (a fact, not a failure" in out
    assert out.count("image hashes") == 1 and "hash unchanged" not in out


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


def test_missing_calibration_is_unmeasured_in_the_verdict(capsys):
    assert run_gate(DATA / "no_calibration.json") == ExitCode.UNMEASURED
    assert capsys.readouterr().out.splitlines()[-1] == "summary: 5 not measured; 4 benchmarks gated; exit 2"


def test_a_regression_beside_a_benchmark_not_measured_exits_2_as_every_command(tmp_path, capsys):
    def drop_one(data):
        data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] != SIMULATE[0]]
    assert run_gate(write_variant(tmp_path, drop_one, source="slower_2x.json")) == ExitCode.UNMEASURED
    out = capsys.readouterr().out.splitlines()
    assert f"NOT MEASURED {SIMULATE[0]}: " in "\n".join(out) and any(line.startswith("REGRESSED timing") for line in out)
    assert out[-1].endswith("1 not measured; 4 benchmarks gated; exit 2")


def test_thresholds_accept_percentages(capsys):
    assert run_gate(DATA / "slower_2x.json", BASELINE, "--threshold", "150%", "--suite-threshold", "1.5") == 0
    assert "+150% per benchmark, +150% suite mean" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["0", "-5%", "nan", "inf"])
def test_thresholds_must_be_positive_and_finite(text):
    with pytest.raises(argparse.ArgumentTypeError, match="threshold must be positive"):
        benchgate.threshold_value(text)


def test_reachable_through_detsim_track(capsys):
    assert track_main(["bench-gate", str(DATA / "unchanged.json"), "--baseline", str(BASELINE)]) == 0
    assert "summary: nothing to act on" in capsys.readouterr().out
