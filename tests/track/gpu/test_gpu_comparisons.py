"""Determinism and the CUDA-against-CPU comparison, drawn from the jobs' answers.

A path that differs goes through the first-divergence finder; its report is read for the culprit."""

from __future__ import annotations

import sys

import pytest
import textwrap

from detsim.track.gpu.comparisons import cuda_matches_cpu, determinism, diverge_argv, read_report
from detsim.track.gpu.plan import GpuPath
from detsim.track.gpu.steps import Budget, StepResult, run_command
from detsim.track.base.status import Status


PATH = GpuPath("triton", "float32")


def _speed(first, last):
    return StepResult("speed", Status.OK, data={"workloads": {"P2": {"sha256": [first, last]}}})


def _parity(sha):
    return StepResult("parity", Status.OK, data={"hash": {"workload": "P2", "sha256": sha}})


def test_identical_runs_are_ok():
    result = determinism(PATH, "P2", _speed("a", "a"), _parity("a"))
    assert result.status is Status.OK and result.data["in_process"] and result.data["across_processes"]


def test_a_run_that_differs_in_one_process_or_across_processes_fails_and_says_where():
    within = determinism(PATH, "P2", _speed("a", "b"), _parity("a"))
    assert within.status is Status.FAILED and "in one process" in within.reason
    across = determinism(PATH, "P2", _speed("a", "a"), _parity("c"))
    assert across.status is Status.FAILED and across.reason.endswith("across processes")
    assert across.data == {"workload": "P2", "in_process": True, "across_processes": False, "streams": 1}


def test_a_missing_render_is_not_taken_for_a_match():
    missing = determinism(PATH, "P2", StepResult("speed", Status.TIMED_OUT), _parity("a"))
    assert missing.status is Status.CRASHED
    one_process = determinism(PATH, "P2", _speed("a", "a"), StepResult("parity", Status.TIMED_OUT))
    assert one_process.data["across_processes"] is None and "one process only" in one_process.reason


def test_cuda_against_cpu_counts_the_cases_with_the_same_bits():
    cuda = StepResult("c", Status.OK, data={"cases": {"a": {"sha256": "1"}, "b": {"sha256": "2"},
                                                          "c": {"error": "x"}}})
    cpu = StepResult("p", Status.OK, data={"cases": {"a": {"sha256": "1"}, "b": {"sha256": "3"},
                                                         "c": {"sha256": "4"}}})
    result = cuda_matches_cpu(cuda, cpu)
    assert result.status is Status.OK
    assert result.data == {"compared": 2, "identical": 1, "differing": ["b"]}
    assert cuda_matches_cpu(cuda, StepResult("p", Status.TIMED_OUT)).status is Status.CRASHED


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
