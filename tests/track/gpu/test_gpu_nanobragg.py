"""nanoBragg.c's timing: a binary's exit and its time, on the workloads' command lines."""

import os

from detsim.track.gpu.nanobragg import skipped, time_nanobragg
from detsim.track.gpu.plan import workload
from detsim.track.gpu.steps import Budget, StepStatus


def _binary(tmp_path, body):
    path = tmp_path / "nanoBragg"
    path.write_text("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def test_each_workload_is_timed_with_every_core_and_its_own_command_line(tmp_path):
    log = tmp_path / "argv.txt"
    binary = _binary(tmp_path, f'echo "$OMP_NUM_THREADS $*" >> {log}')
    result = time_nanobragg(binary, ("P2@32", "P1@8"), budget=Budget(60), box_s=30, root=tmp_path)
    assert result.status is StepStatus.OK and set(result.data["workloads"]) == {"P2@32", "P1@8"}
    first = log.read_text().splitlines()[0].split()
    assert first[0] == str(os.cpu_count()) and first[1:1 + len(workload("P2@32").argv())] == workload("P2@32").argv()
    rate = result.data["workloads"]["P2@32"]
    assert abs(rate["pixel_steps"] / rate["pixel_steps_per_s"] - rate["wall_s"]) < 1e-3


def test_a_failing_binary_is_an_error_and_no_binary_a_skip(tmp_path):
    failed = time_nanobragg(_binary(tmp_path, "echo broken >&2; exit 3"), ("P1@8",), budget=Budget(60), box_s=30,
                            root=tmp_path)
    assert failed.status is StepStatus.ERROR and "exited 3" in failed.reason and "broken" in failed.reason
    assert skipped().status is StepStatus.SKIPPED
