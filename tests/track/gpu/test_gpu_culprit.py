"""A path that differs goes through the first-divergence finder; its report is read for the culprit."""

import sys
import textwrap

import pytest

from detsim.track.gpu.culprit import diverge_argv, read_report
from detsim.track.gpu.plan import GpuPath
from detsim.track.gpu.steps import Budget, StepStatus, run_command


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
    assert result.status is StepStatus.FAILED and "rand" in result.data["culprit"]


def test_a_report_without_a_divergence_is_ok_and_a_crash_an_error():
    same = read_report("d", 0, "diverge: x\nVERDICT  NO DIVERGENCE: 9 events\n", "", 1.0)
    assert same.status is StepStatus.OK and same.data["culprit"] is None
    crashed = read_report("d", 2, "", "diverge: --device cuda: no CUDA device on this machine\n", 1.0)
    assert crashed.status is StepStatus.ERROR and "no CUDA device" in crashed.reason
