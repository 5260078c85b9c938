"""The device tests' command and how its output is read."""

from detsim.track.gpu.devicetests import pytest_argv, read_collection, read_run
from detsim.track.gpu.steps import StepStatus


def test_the_command_selects_the_cuda_parameter_and_collects_only_without_a_run():
    argv = pytest_argv(run=True, workers=4)
    assert argv[argv.index("--device") + 1] == "cuda" and argv[argv.index("-k") + 1] == "cuda"
    assert argv[-2:] == ["-n", "4"]
    assert pytest_argv(run=False, workers=4)[-1] == "--collect-only"


def test_a_passing_run_is_ok_and_a_failing_one_names_its_failures():
    ok = read_run("t", 0, "....\n160 passed, 2 skipped in 30.1s\n", 31.0)
    assert ok.status is StepStatus.OK and ok.data["counts"] == {"passed": 160, "skipped": 2}
    failed = read_run("t", 1, "FAILED tests/test_x.py::test_y[cuda] - AssertionError\n"
                              "1 failed, 159 passed in 30.0s\n", 31.0)
    assert failed.status is StepStatus.FAILED and failed.data["failures"] == ["tests/test_x.py::test_y[cuda]"]
    broken = read_run("t", 4, "ERROR: usage\n", 1.0)
    assert broken.status is StepStatus.ERROR


def test_a_collection_that_finds_nothing_is_an_error():
    found = read_collection("t", 0, "a\n162/2134 tests collected (1972 deselected) in 5.30s\n", 6.0, "no CUDA")
    assert found.status is StepStatus.SKIPPED and found.data == {"collected": 162}
    assert read_collection("t", 5, "no tests collected\n", 6.0, "no CUDA").status is StepStatus.ERROR


def test_a_module_that_cannot_be_collected_fails_the_step_without_hiding_the_rest():
    assert "--continue-on-collection-errors" in pytest_argv(run=True, workers=1)
    out = ("ERROR tests/track/gate/test_gate_checks.py\nERROR tests/track/gate/test_gate_cost.py\n"
           "167/2155 tests collected (1988 deselected), 2 errors in 9.39s\n")
    result = read_collection("t", 1, out, 9.4, "no CUDA")
    assert result.status is StepStatus.FAILED and result.data["collected"] == 167
    assert result.data["collection_errors"] == ["tests/track/gate/test_gate_checks.py",
                                                "tests/track/gate/test_gate_cost.py"]
    ran = read_run("t", 1, out.replace("167/2155 tests collected (1988 deselected), 2 errors",
                                       "165 passed, 2 errors"), 30.0)
    assert ran.status is StepStatus.FAILED and len(ran.data["failures"]) == 2 and ran.data["counts"]["passed"] == 165
