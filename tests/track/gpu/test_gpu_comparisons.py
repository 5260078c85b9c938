"""Determinism and the CUDA-against-CPU comparison, drawn from the jobs' answers."""

from detsim.track.gpu.comparisons import cuda_matches_cpu, determinism
from detsim.track.gpu.plan import GpuPath
from detsim.track.gpu.steps import StepResult, StepStatus

PATH = GpuPath("triton", "float32")


def _speed(first, last):
    return StepResult("speed", StepStatus.OK, data={"workloads": {"P2": {"sha256": [first, last]}}})


def _parity(sha):
    return StepResult("parity", StepStatus.OK, data={"hash": {"workload": "P2", "sha256": sha}})


def test_identical_runs_are_ok():
    result = determinism(PATH, "P2", _speed("a", "a"), _parity("a"))
    assert result.status is StepStatus.OK and result.data["in_process"] and result.data["across_processes"]


def test_a_run_that_differs_in_one_process_or_across_processes_fails_and_says_where():
    within = determinism(PATH, "P2", _speed("a", "b"), _parity("a"))
    assert within.status is StepStatus.FAILED and "in one process" in within.reason
    across = determinism(PATH, "P2", _speed("a", "a"), _parity("c"))
    assert across.status is StepStatus.FAILED and across.reason.endswith("across processes")
    assert across.data == {"workload": "P2", "in_process": True, "across_processes": False, "streams": 1}


def test_a_missing_render_is_not_taken_for_a_match():
    missing = determinism(PATH, "P2", StepResult("speed", StepStatus.TIMED_OUT), _parity("a"))
    assert missing.status is StepStatus.ERROR
    one_process = determinism(PATH, "P2", _speed("a", "a"), StepResult("parity", StepStatus.TIMED_OUT))
    assert one_process.data["across_processes"] is None and "one process only" in one_process.reason


def test_cuda_against_cpu_counts_the_cases_with_the_same_bits():
    cuda = StepResult("c", StepStatus.OK, data={"cases": {"a": {"sha256": "1"}, "b": {"sha256": "2"},
                                                          "c": {"error": "x"}}})
    cpu = StepResult("p", StepStatus.OK, data={"cases": {"a": {"sha256": "1"}, "b": {"sha256": "3"},
                                                         "c": {"sha256": "4"}}})
    result = cuda_matches_cpu(cuda, cpu)
    assert result.status is StepStatus.OK
    assert result.data == {"compared": 2, "identical": 1, "differing": ["b"]}
    assert cuda_matches_cpu(cuda, StepResult("p", StepStatus.TIMED_OUT)).status is StepStatus.ERROR
