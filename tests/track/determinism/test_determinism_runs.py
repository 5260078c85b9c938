"""determinism.runs: the matrix run here and in fresh processes; verdicts of planted behaviours."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.runtime.targets import resolve_callable, resolve_case, resolve_command_line
from detsim.track.determinism.matrix import RunConfig
from detsim.track.determinism.runs import ISOLATED_RUN, deterministic_mode, device_unavailable, isolated_job, \
    job_target, run_isolated, run_matrix, run_once

DATA = Path(__file__).resolve().parents[2] / "data"
PLANTED = DATA / "planted_ops.py"
# 8x8 pixels that still exercise subpixels, two sources, phi steps, mosaic domains and water.
TINY = ("-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 -mosaic 1 -mosaic_dom 2 -water 0.5 "
        "-hdivrange 4 -hdivsteps 2 -detpixels 8 -pixel 4 -distance 40 -oversample 2 -phisteps 2 -osc 2")


def planted(name: str):
    return resolve_callable(f"{PLANTED}:{name}")


def matrix_of(targets, **axes):
    options = dict(devices=["cpu"], dtypes=["float64", "float32"], modes=["eager"], threads=[1, 2], repeats=2)
    options.update(axes)
    return run_matrix(targets, **options)


def test_detsim_repeats_bit_for_bit_across_threads_and_hashes_the_floatfile_bytes():
    target = resolve_command_line(TINY)
    matrix = matrix_of([target])
    assert matrix.exit_code() == 0
    assert [r.status for r in matrix.runs] == ["ok"] * 8
    assert matrix.failures() == [] and matrix.findings() == []
    assert "DETERMINISTIC" in matrix.verdict()
    image = target.run("cpu", torch.float32, "eager")["image"]
    floatfile_sha = hashlib.sha256(image.numpy().astype("<f4").tobytes()).hexdigest()
    f32 = [r for r in matrix.runs if r.config.dtype == "float32"]
    assert {r.hashes["image"]["sha256"] for r in f32} == {floatfile_sha}
    rows = matrix.render().splitlines()
    assert any(line.split()[:3] == ["cpu", "float64", "eager"] and line.split()[3:] == ["A", "A", "A", "A"]
               for line in rows)


def test_a_thread_dependent_reduction_is_a_cross_thread_finding_not_a_failure():
    matrix = matrix_of([planted("thread_dependent_sum")], dtypes=["float32"])
    assert matrix.exit_code() == 0
    assert [c.kind for c in matrix.findings()] == ["threads"]
    finding = matrix.findings()[0]
    assert (finding.a.config.threads, finding.b.config.threads) == (1, 2)
    diff = finding.outputs["out"]
    assert diff["differing"] == 1 and 0 < diff["max_abs"] < 1 and 0 < diff["max_rel"] < 1e-4
    assert all(c.identical for c in matrix.comparisons() if c.kind == "repeat")
    assert "FINDING  threads" in matrix.render()
    assert matrix.exit_code(strict=True) == 1
    assert [c.kind for c in matrix.failures(strict=True)] == ["threads"]


def test_repeats_that_differ_fail_with_the_size_of_the_difference():
    matrix = matrix_of([planted("drifting")], dtypes=["float64"], threads=[1])
    assert matrix.exit_code() == 1
    (failure,) = matrix.failures()
    assert failure.kind == "repeat" and (failure.a.repeat, failure.b.repeat) == (0, 1)
    diff = failure.outputs["out"]
    assert diff["differing"] == diff["total"] == 64
    assert diff["max_abs"] == pytest.approx(1e-6, rel=1e-6)
    assert matrix.render().splitlines()[-1].startswith("VERDICT  NOT DETERMINISTIC")


def test_a_crash_is_captured_verbatim_and_the_matrix_goes_on():
    matrix = matrix_of([planted("crashes_in_float32"), planted("thread_dependent_sum")], threads=[1])
    crashed = matrix.crashed()
    assert {(r.config.target.rsplit(":", 1)[1], r.config.dtype) for r in crashed} == {("crashes_in_float32", "float32")}
    assert len(crashed) == 2
    assert "Traceback (most recent call last)" in crashed[0].error
    assert "in crashes_in_float32" in crashed[0].error
    assert crashed[0].error.rstrip().endswith("RuntimeError: planted failure: no float32 kernel for this configuration")
    ran = [r for r in matrix.runs if r.status == "ok"]
    assert len(ran) == 2 + 4  # float64 of the crashing target, everything of the other
    assert matrix.exit_code() == 2
    assert "INCOMPLETE" in matrix.verdict()
    report = next(iter(matrix.crash_reports().values()))
    assert "dtype: float32" in report and "RuntimeError: planted failure" in report


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the report when CUDA is absent")
def test_an_absent_device_is_reported_as_skipped():
    matrix = matrix_of([planted("thread_dependent_sum")], devices=["cpu", "cuda"], dtypes=["float64"], threads=[1])
    skipped = [r for r in matrix.runs if r.status == "skipped"]
    assert len(skipped) == 2 and all("torch.cuda.is_available() is False" in r.reason for r in skipped)
    assert matrix.exit_code() == 0
    assert "SKIPPED  cuda" in matrix.render()


def test_every_engine_mode_is_an_axis_and_unavailable_ones_are_skipped():
    from detsim.engine import MODES

    calls = []

    def fake(device, dtype, mode):
        calls.append(mode)
        return {"image": torch.zeros(2, 2, dtype=dtype)}

    target = dataclasses.replace(resolve_command_line(TINY), runner=fake)
    assert target.modes == tuple(MODES)
    matrix = matrix_of([target], modes=list(MODES), dtypes=["float64"], threads=[1], repeats=1)
    ran = {r.config.mode for r in matrix.runs if r.status == "ok"}
    skipped = {r.config.mode: r.reason for r in matrix.runs if r.status == "skipped"}
    assert ran | set(skipped) == set(MODES) and set(calls) == ran and "eager" in ran
    assert all("available_modes" in reason for reason in skipped.values())


def test_a_callable_has_only_the_eager_mode_and_the_others_are_noted():
    matrix = matrix_of([planted("thread_dependent_sum")], modes=["eager", "compiled"], dtypes=["float64"],
                       threads=[1], repeats=1)
    assert {r.config.mode for r in matrix.runs} == {"eager"}
    assert any("have no compiled mode" in note for note in matrix.notes)


def test_device_unavailable_names_a_bad_device_and_accepts_the_cpu():
    assert device_unavailable("cpu") is None
    assert device_unavailable("no_such_device").startswith("not a torch device")


def test_deterministic_mode_is_undone_after_the_block():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic_mode(True):
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.are_deterministic_algorithms_enabled() == before
    with deterministic_mode(False):
        assert torch.are_deterministic_algorithms_enabled() == before


def test_an_isolated_run_hashes_what_an_in_process_run_hashes_and_a_crash_keeps_its_stderr():
    isolate = {"grads": [], "chunk_pixels": None, "golden_dir": None}
    target = planted("crashes_in_float32")
    ran = run_isolated(target, RunConfig(target.name, "cpu", "float64", "eager", 1), 0, False, isolate)
    here = run_once(target, RunConfig(target.name, "cpu", "float64", "eager", 1), 0, False)
    assert ran.status == "ok" and ran.hashes == here.hashes and torch.equal(ran.outputs["out"], here.outputs["out"])
    crashed = run_isolated(target, RunConfig(target.name, "cpu", "float32", "eager", 1), 0, False, isolate)
    assert crashed.status == "crashed" and crashed.error.startswith("[isolated worker, exit status 1]\n")
    assert "Traceback (most recent call last)" in crashed.error  # the child's stderr whole, not one line
    assert crashed.error.rstrip().endswith("RuntimeError: planted failure: no float32 kernel for this configuration")


def test_run_once_captures_a_crash_and_a_matrix_of_crashes_is_unmeasured():
    config = RunConfig("t", "cpu", "float32", "eager", 1)
    result = run_once(planted("crashes_in_float32"), config, 0, False)
    assert result.status == "crashed" and "planted failure" in result.error and result.hashes == {}
    matrix = matrix_of([planted("crashes_in_float32")], dtypes=["float32"], threads=[1], repeats=1)
    assert matrix.exit_code() is ExitCode.UNMEASURED


@pytest.mark.slow
def test_isolated_runs_agree_with_in_process_runs():
    target = resolve_command_line(TINY)
    isolate = {"grads": [], "chunk_pixels": None, "golden_dir": None}
    apart = matrix_of([target], dtypes=["float32"], isolate=isolate)
    together = matrix_of([target], dtypes=["float32"])
    assert apart.exit_code() == 0
    assert [r.key() for r in apart.runs] == [r.key() for r in together.runs]


@pytest.mark.slow
def test_golden_cases_in_every_mode_repeat_bit_for_bit():
    from detsim.engine import MODES, available_modes

    targets = [resolve_case("c02"), resolve_case("o01")]
    matrix = run_matrix(targets, devices=["cpu"], dtypes=["float64", "float32"], modes=list(available_modes("cpu")),
                        threads=[1, 2], repeats=2)
    assert not matrix.crashed(), matrix.render()
    assert matrix.exit_code() == 0, matrix.render()  # every configuration repeats bit for bit
    # eager sums in a fixed order whatever the thread count; torch.compile specializes its CPU kernels
    # on the thread count, and a kernel built for 2 threads may split a reduction differently, so the
    # compiled path's last bits across thread counts are a finding, not a failure
    eager_threads = [c for c in matrix.findings() if c.kind == "threads" and c.b.config.mode == "eager"]
    assert not eager_threads, matrix.render()
    assert set(MODES) >= {r.config.mode for r in matrix.runs}


def test_the_job_saves_what_an_in_process_run_hashes(tmp_path):
    job = {"grads": [], "chunk_pixels": None, "golden_dir": None, "kind": "callable",
           "spec": f"{PLANTED}:crashes_in_float32", "device": "cpu", "dtype": "float64", "mode": "eager",
           "threads": 1, "deterministic": False, "out": str(tmp_path / "out.pt")}
    assert job_target(job).name == job["spec"]
    assert isolated_job(job) == {"saved": ["out"]}
    saved = torch.load(tmp_path / "out.pt", weights_only=True)
    here = run_once(resolve_callable(job["spec"]), RunConfig(job["spec"], "cpu", "float64", "eager", 1), 0, False)
    assert here.status == "ok" and list(saved) == ["out"] and torch.equal(saved["out"], here.outputs["out"])
    golden = job_target({**job, "kind": "golden", "spec": "c02"})
    assert (golden.kind, golden.name) == ("golden", "c02_xds_xbeam_quirk")


def test_the_matrix_names_this_module_as_its_job():
    module, function = ISOLATED_RUN.split(":")
    assert module == isolated_job.__module__ and function == isolated_job.__name__
