"""The device tests' command and how its output is read; the first-divergence finder's command and how its
report is read (the culprit of a path that differs); nanoBragg.c's timing: a binary's exit and its time, on the
workloads' command lines."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from detsim.track.gpu import programs
from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.programs import (NANOBRAGG_CALLS, diverge_argv, pytest_argv, read_collection, read_report,
                                       read_run, time_nanobragg)
from detsim.track.gpu.steps import Budget, run_command
from detsim.track.base.status import Status


def test_the_command_selects_the_cuda_parameter_and_collects_only_without_a_run():
    argv = pytest_argv(run=True, workers=4)
    assert argv[argv.index("--device") + 1] == "cuda" and argv[argv.index("-k") + 1] == "cuda"
    assert argv[-2:] == ["-n", "4"]
    assert pytest_argv(run=False, workers=4)[-1] == "--collect-only"


def test_a_passing_run_is_ok_and_a_failing_one_names_its_failures():
    ok = read_run("t", 0, "....\n160 passed, 2 skipped in 30.1s\n", 31.0)
    assert ok.status is Status.OK and ok.data["counts"] == {"passed": 160, "skipped": 2}
    failed = read_run("t", 1, "FAILED tests/test_x.py::test_y[cuda] - AssertionError\n"
                              "1 failed, 159 passed in 30.0s\n", 31.0)
    assert failed.status is Status.FAILED and failed.data["failures"] == ["tests/test_x.py::test_y[cuda]"]
    assert failed.data["why"] == {"tests/test_x.py::test_y[cuda]": "AssertionError"}
    broken = read_run("t", 4, "ERROR: usage\n", 1.0)
    assert broken.status is Status.CRASHED


def test_a_collection_that_finds_nothing_is_an_error():
    found = read_collection("t", 0, "a\n162/2134 tests collected (1972 deselected) in 5.30s\n", 6.0, "no CUDA")
    assert found.status is Status.SKIPPED and found.data == {"collected": 162}
    assert read_collection("t", 5, "no tests collected\n", 6.0, "no CUDA").status is Status.CRASHED


def test_a_module_that_cannot_be_collected_fails_the_step_without_hiding_the_rest():
    assert "--continue-on-collection-errors" in pytest_argv(run=True, workers=1)
    out = ("ERROR tests/track/gate/test_gate_checks.py\nERROR tests/track/gate/test_gate_cost.py\n"
           "167/2155 tests collected (1988 deselected), 2 errors in 9.39s\n")
    result = read_collection("t", 1, out, 9.4, "no CUDA")
    assert result.status is Status.FAILED and result.data["collected"] == 167
    assert result.data["collection_errors"] == ["tests/track/gate/test_gate_checks.py",
                                                "tests/track/gate/test_gate_cost.py"]
    ran = read_run("t", 1, out.replace("167/2155 tests collected (1988 deselected), 2 errors",
                                       "165 passed, 2 errors"), 30.0)
    assert ran.status is Status.FAILED and len(ran.data["failures"]) == 2 and ran.data["counts"]["passed"] == 165


def _binary(tmp_path, body):
    path = tmp_path / "nanoBragg"
    path.write_text("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def test_each_workload_is_timed_with_every_core_and_its_own_command_line(tmp_path):
    log = tmp_path / "argv.txt"
    binary = _binary(tmp_path, f'echo "$OMP_NUM_THREADS $*" >> {log}')
    result = time_nanobragg(binary, ("P2@32", "P1@8"), budget=Budget(60), root=tmp_path)
    assert result.status is Status.OK and set(result.data["workloads"]) == {"P2@32", "P1@8"}
    first = log.read_text().splitlines()[0].split()
    assert first[0] == str(os.cpu_count()) and first[1:1 + len(workload("P2@32").argv())] == workload("P2@32").argv()
    rate = result.data["workloads"]["P2@32"]
    assert abs(rate["pixel_steps"] / rate["pixel_steps_per_s"] - rate["wall_s"]) < 1e-3
    assert rate["calls"] == NANOBRAGG_CALLS  # a run under a second is timed again, its best kept
    assert len(log.read_text().splitlines()) == 2 * NANOBRAGG_CALLS


def test_a_run_of_a_second_or_more_is_timed_once(tmp_path, monkeypatch):
    monkeypatch.setattr(programs, "NANOBRAGG_LONG_S", 0.1)  # a second, scaled down: the run sleeps past it
    result = time_nanobragg(_binary(tmp_path, "sleep 0.15"), ("P1@8",), budget=Budget(60), root=tmp_path)
    assert result.status is Status.OK and result.data["workloads"]["P1@8"]["calls"] == 1


def test_a_failing_binary_is_an_error(tmp_path):
    failed = time_nanobragg(_binary(tmp_path, "echo broken >&2; exit 3"), ("P1@8",), budget=Budget(60),
                            root=tmp_path)
    assert failed.status is Status.CRASHED and "exited 3" in failed.reason and "broken" in failed.reason


def test_compiled_code_is_recorded_by_its_kernels_and_a_process_difference_in_fresh_processes():
    argv = diverge_argv(GpuPath("compiled", "float32"), "P2@32", "cuda", across_processes=True)
    assert argv[1:4] == ["-m", "detsim.track.cli", "diverge"]
    assert argv[argv.index("--layers") + 1] == "kernels" and "--processes" in argv
    assert "-detpixels 32" in argv[argv.index("--nanobragg") + 1]
    assert "--layers" not in diverge_argv(GpuPath("eager", "float64"), "P2@32", "cpu", across_processes=False)


@pytest.mark.slow
def test_the_finder_names_the_culprit_of_a_planted_nondeterministic_op(tmp_path):
    (tmp_path / "planted.py").write_text(textwrap.dedent("""
        import torch
        def target():
            x = torch.ones(64)
            return x + torch.rand(64)
    """))
    argv = [sys.executable, "-m", "detsim.track.cli", "diverge", "--call", "planted.py:target"]
    done, unfinished, seconds = run_command("divergence", argv, budget=Budget(120), box_s=100, root=tmp_path)
    assert unfinished is None
    result = read_report("divergence", done.returncode, done.stdout, done.stderr, seconds)
    assert result.status is Status.FAILED and "rand" in result.data["culprit"]


def test_a_report_without_a_divergence_is_ok_and_a_crash_an_error():
    same = read_report("d", 0, "diverge: x\nVERDICT  NO DIVERGENCE: 9 events\n", "", 1.0)
    assert same.status is Status.OK and same.data["culprit"] is None
    crashed = read_report("d", 2, "", "diverge: --device cuda: no CUDA device on this machine\n", 1.0)
    assert crashed.status is Status.CRASHED and "no CUDA device" in crashed.reason
