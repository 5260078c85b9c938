"""compare.matrix: sizes of differences, which comparisons fail, and their rendering."""

from __future__ import annotations

import json

import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.compare.matrix import Matrix, _letter, compare_runs, tensor_difference
from detsim.track.compare.run_log import RunConfig, RunLog, ended_log, output_log
from detsim.track.base.status import Status


def ok_run(config: RunConfig, repeat: int, out: torch.Tensor) -> RunLog:
    return output_log(config, repeat, {"out": out}, 0.0)


def test_tensor_difference_counts_elements_and_treats_nan_as_equal(device, dtype):
    a = torch.tensor([1.0, float("nan"), 4.0, 0.0], device=device, dtype=dtype)
    b = torch.tensor([1.0, float("nan"), 5.0, 0.0], device=device, dtype=dtype)
    diff = tensor_difference(a, b)
    assert (diff["differing"], diff["total"], diff["max_abs"], diff["max_rel"]) == (1, 4, 1.0, 0.2)
    same_values = tensor_difference(torch.zeros(2, dtype=dtype), -torch.zeros(2, dtype=dtype))
    assert same_values["differing"] == 0 and "signed zeros" in same_values["note"]
    assert tensor_difference(a, b[:2])["comparable"] is False
    from_zero = tensor_difference(torch.zeros(1, dtype=dtype), torch.ones(1, dtype=dtype))
    assert from_zero["max_rel"] == 1.0


def test_identical_repeats_keep_no_tensors_and_differing_ones_are_failures():
    config = RunConfig("t", "cpu", "float64", "eager", 1)
    matrix = Matrix(threads=[1], repeats=3)
    matrix.add(ok_run(config, 0, torch.ones(4, dtype=torch.float64)))
    matrix.add(ok_run(config, 1, torch.ones(4, dtype=torch.float64)))
    assert matrix.runs[0].tensors and matrix.runs[1].tensors == {}  # the identical repeat drops its tensors
    matrix.add(ok_run(config, 2, torch.full((4,), 2.0, dtype=torch.float64)))
    (failure,) = matrix.failures()
    assert failure.kind == "repeat" and failure.outputs["out"]["differing"] == 4
    assert matrix.exit_code() is ExitCode.REGRESSED and matrix.verdict().startswith("NOT DETERMINISTIC")
    assert json.loads(json.dumps(matrix.to_dict()))["exit_code"] == 1


def test_thread_differences_are_findings_unless_strict_and_modes_compare_against_eager():
    runs = {(mode, n): ok_run(RunConfig("t", "cpu", "float32", mode, n), 0, torch.tensor([float(n)]))
            for mode in ("eager", "compiled") for n in (1, 2)}
    matrix = Matrix(threads=[1, 2], repeats=1)
    for run in runs.values():
        matrix.add(run)
    kinds = sorted(c.kind for c in matrix.findings())
    assert kinds == ["threads", "threads"] and not matrix.failures()  # modes agree at each thread count
    assert matrix.exit_code() is ExitCode.OK and matrix.exit_code(strict=True) is ExitCode.REGRESSED
    mode = [c for c in matrix.comparisons() if c.kind == "mode"]
    assert {c.a.config.mode for c in mode} == {"eager"} and all(c.identical for c in mode)


def test_a_matrix_without_a_completed_run_is_unmeasured():
    matrix = Matrix(threads=[1], repeats=1)
    matrix.add(ended_log(RunConfig("t", "cuda", "float64", "eager", 1), 0, Status.SKIPPED, reason="no GPU"))
    assert matrix.exit_code() is ExitCode.UNMEASURED and matrix.verdict() == "UNMEASURED: no run completed"


def test_compare_of_identical_runs_lists_no_outputs_and_an_output_of_one_run_is_not_comparable():
    config = RunConfig("t", "cpu", "float64", "eager", 1)
    a, b = ok_run(config, 0, torch.ones(2)), ok_run(config, 1, torch.ones(2))
    assert compare_runs("repeat", a, b).identical and compare_runs("repeat", a, b).outputs == {}
    extra = output_log(config, 2, {"out": torch.ones(2), "grad": torch.zeros(2)}, 0.0)
    assert compare_runs("repeat", a, extra).outputs == {"grad": {"comparable": False,
                                                                 "note": "output present in one run only"}}


def test_the_same_bytes_in_another_shape_are_a_difference():
    config = RunConfig("t", "cpu", "float64", "eager", 1)
    flat, square = ok_run(config, 0, torch.ones(4)), ok_run(config, 1, torch.ones(2, 2))
    assert flat.results[0].hash == square.results[0].hash and flat.key() != square.key()
    compared = compare_runs("repeat", flat, square)
    assert not compared.identical and compared.outputs == {"out": {"comparable": False, "note": "shape [4] vs [2, 2]"}}


def test_letters_run_past_z_like_spreadsheet_columns():
    assert [_letter(i) for i in (0, 25, 26, 27, 52)] == ["A", "Z", "AA", "AB", "BA"]


def test_runs_tsv_has_one_row_per_output_and_a_dash_row_for_runs_without_outputs():
    config = RunConfig("t", "cpu", "float64", "eager", 1)
    matrix = Matrix(threads=[1], repeats=2)
    matrix.add(ok_run(config, 0, torch.ones(2, 3)))
    matrix.add(ended_log(config, 1, Status.CRASHED, error="Traceback ...\nValueError: boom"))
    header, ok, crashed = matrix.runs_tsv().splitlines()
    assert header.split("\t")[-2:] == ["sha256_float32", "sha256_native"]
    assert ok.split("\t")[8:10] == ["out", "2x3"] and crashed.split("\t")[-4:] == ["-"] * 4
    (name, body), = matrix.crash_reports().items()
    assert name.endswith(".txt") and "repeat: 1" in body and body.endswith("ValueError: boom")
    assert "CRASH    t cpu/float64/eager (threads=1 repeat 1): ValueError: boom" in matrix.render()
