"""compare.runs: the matrix run here and in fresh processes (verdicts of planted behaviours); named
computations made calls, the jobs of fresh interpreters validated, and runs traced here and in a fresh
interpreter with a given package."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sys
import traceback
from pathlib import Path

import pytest
import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.fresh import Finished, TimedOut
from detsim.track.compare.firstdiff import compare_commits
from detsim.track.compare.run_log import RunConfig, RunLog
from detsim.track.base.fresh import JobError
from detsim.track.compare.runs import ISOLATED_RUN, TRACE_RUN, EndedWithoutLog, IsolatedJob, Named, \
    TraceJob, TracingError, deterministic_mode, isolated_job, run_isolated, run_matrix, run_once, \
    set_interpreter, trace_at, trace_job, trace_run
from detsim.track.base.computations import ComputationError, resolve_callable, resolve_case, resolve_command_line

DATA = Path(__file__).resolve().parents[2] / "data"
ROOT = DATA.parent.parent
PLANTED = DATA / "planted_ops.py"
# 8x8 pixels that still exercise subpixels, two sources, phi steps, mosaic domains and water.
TINY = ("-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 -mosaic 1 -mosaic_dom 2 -water 0.5 "
        "-hdivrange 4 -hdivsteps 2 -detpixels 8 -pixel 4 -distance 40 -oversample 2 -phisteps 2 -osc 2")


def planted(name: str):
    return resolve_callable(f"{PLANTED}:{name}")


def matrix_of(computations, **axes):
    options = dict(devices=["cpu"], dtypes=["float64", "float32"], modes=["eager"], threads=[1, 2], repeats=2)
    options.update(axes)
    return run_matrix(computations, **options)


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
    assert {r.results[0].float32 for r in f32} == {floatfile_sha}
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
    assert {(r.config.computation.rsplit(":", 1)[1], r.config.dtype) for r in crashed} == {("crashes_in_float32", "float32")}
    assert len(crashed) == 2
    assert "Traceback (most recent call last)" in crashed[0].error
    assert "in crashes_in_float32" in crashed[0].error
    assert crashed[0].error.rstrip().endswith("RuntimeError: planted failure: no float32 kernel for this configuration")
    ran = [r for r in matrix.runs if r.status == "ok"]
    assert len(ran) == 2 + 4  # float64 of the crashing computation, everything of the other
    assert matrix.exit_code() == 2
    assert "INCOMPLETE" in matrix.verdict()
    report = next(iter(matrix.crash_reports().values()))
    assert "dtype: float32" in report and "RuntimeError: planted failure" in report


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the report when CUDA is absent")
def test_an_absent_device_is_reported_as_skipped():
    matrix = matrix_of([planted("thread_dependent_sum")], devices=["cpu", "cuda"], dtypes=["float64"], threads=[1])
    skipped = [r for r in matrix.runs if r.status == "skipped"]
    assert len(skipped) == 2 and all(r.reason == "no CUDA device on this machine" for r in skipped)
    assert matrix.exit_code() == 0
    assert "SKIPPED  cuda" in matrix.render()


def test_every_engine_mode_is_an_axis_and_unavailable_ones_are_skipped():
    from detsim.rendering.engine import MODES

    calls = []

    def fake(device, dtype, mode):
        calls.append(mode)
        return {"image": torch.zeros(2, 2, dtype=dtype)}

    target = dataclasses.replace(resolve_command_line(TINY), run=fake)
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


def test_a_device_that_is_no_torch_device_is_skipped_with_the_reason():
    matrix = matrix_of([planted("thread_dependent_sum")], devices=["no_such_device"], dtypes=["float64"], threads=[1],
                       repeats=1)
    (skipped,) = matrix.runs
    assert skipped.status == "skipped" and skipped.reason.startswith("not a torch device")
    assert "SKIPPED  no_such_device for 1 computation(s): not a torch device" in matrix.render()


def test_deterministic_mode_is_undone_after_the_block():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic_mode(True):
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.are_deterministic_algorithms_enabled() == before
    with deterministic_mode(False):
        assert torch.are_deterministic_algorithms_enabled() == before


def test_an_isolated_run_hashes_what_an_in_process_run_hashes():
    named = Named("callable", f"{PLANTED}:crashes_in_float32")
    computation = named.computation()
    ran = run_isolated(named, RunConfig(computation.name, "cpu", "float64", "eager", 1), 0, False)
    here = run_once(computation, RunConfig(computation.name, "cpu", "float64", "eager", 1), 0, False)
    assert ran.status == "ok" and ran.results == here.results and torch.equal(ran.tensors["out"], here.tensors["out"])


def _assert_crashed_with_its_stderr(crashed) -> None:
    assert crashed.status == "crashed" and crashed.error.startswith("[isolated worker, exit status 1]\n")
    assert "Traceback (most recent call last)" in crashed.error  # the child's stderr whole, not one line
    assert crashed.error.rstrip().endswith("RuntimeError: planted failure: no float32 kernel for this configuration")


@pytest.mark.slow  # its in-process twin: test_an_isolated_crash_is_the_workers_whole_stderr
def test_an_isolated_crash_keeps_its_stderr():
    named = Named("callable", f"{PLANTED}:crashes_in_float32")
    _assert_crashed_with_its_stderr(run_isolated(named, RunConfig(named.computation().name, "cpu", "float32", "eager", 1),
                                                 0, False))


def test_an_isolated_crash_is_the_workers_whole_stderr(monkeypatch):
    """The crash above with the worker's job, :func:`isolated_job`, run here: its traceback is what a fresh
    interpreter writes to stderr before exiting 1 (tests/track/base/test_base_fresh.py proves that run_job keeps
    it whole)."""
    def here(entry, job, **how):
        assert entry == ISOLATED_RUN and how["check"] is False
        try:
            isolated_job(IsolatedJob.from_json(json.loads(json.dumps(job.to_json()))))
        except Exception:  # noqa: BLE001 - what the child's interpreter prints before exiting 1
            return Finished(1, b"", traceback.format_exc().encode(), 0.0)
        pytest.fail("the planted computation did not crash")

    monkeypatch.setattr("detsim.track.compare.runs.run_job", here)
    named = Named("callable", f"{PLANTED}:crashes_in_float32")
    _assert_crashed_with_its_stderr(run_isolated(named, RunConfig(named.computation().name, "cpu", "float32", "eager", 1),
                                                 0, False))


def test_run_once_captures_a_crash_and_a_matrix_of_crashes_is_unmeasured():
    config = RunConfig("t", "cpu", "float32", "eager", 1)
    result = run_once(planted("crashes_in_float32"), config, 0, False)
    assert result.status == "crashed" and "planted failure" in result.error and result.results == []
    matrix = matrix_of([planted("crashes_in_float32")], dtypes=["float32"], threads=[1], repeats=1)
    assert matrix.exit_code() is ExitCode.UNMEASURED


@pytest.mark.slow
def test_isolated_runs_agree_with_in_process_runs():
    named = Named("nanobragg", TINY)
    apart = matrix_of([named.computation()], dtypes=["float32"], isolate=[named])
    together = matrix_of([named.computation()], dtypes=["float32"])
    assert apart.exit_code() == 0
    assert [r.key() for r in apart.runs] == [r.key() for r in together.runs]


@pytest.mark.slow
def test_golden_cases_in_every_mode_repeat_bit_for_bit():
    from detsim.rendering.engine import MODES, available_modes

    computations = [resolve_case("c02"), resolve_case("o01")]
    matrix = run_matrix(computations, devices=["cpu"], dtypes=["float64", "float32"], modes=list(available_modes("cpu")),
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
    call = f"{PLANTED}:crashes_in_float32"
    job = IsolatedJob(Named("callable", call), threads=1, deterministic=False, out=str(tmp_path / "out.pt"))
    assert isolated_job(IsolatedJob.from_json(json.loads(json.dumps(job.to_json())))) == {"saved": ["out"]}  # as
    # the child reads it
    saved = torch.load(tmp_path / "out.pt", weights_only=True)
    here = run_once(resolve_callable(call), RunConfig(call, "cpu", "float64", "eager", 1), 0, False)
    assert here.status == "ok" and list(saved) == ["out"] and torch.equal(saved["out"], here.tensors["out"])
    golden = Named("golden", "c02").computation()
    assert (golden.kind, golden.name) == ("golden", "c02_xds_xbeam_quirk")


def test_a_job_round_trips_through_json_and_a_bad_one_is_refused_in_one_line(tmp_path):
    named = Named("nanobragg", TINY, grads=("detector.distance_mm",), chunk_pixels=64, golden_dir="g")
    job = TraceJob(named, ("ops",), "off", 2, "B", str(tmp_path / "b.json"))
    data = json.loads(json.dumps(job.to_json()))
    assert TraceJob.from_json(data) == job and data["computation"]["grads"] == ["detector.distance_mm"]
    for change, message in (({"run": "C"}, "run 'C'"), ({"threads": 0}, "threads 0"),
                            ({"layers": ["ops", "tensors"]}, "layers"), ({"extra": 1}, "unknown field(s) extra"),
                            ({"computation": {**data["computation"], "kind": "shell"}}, "computation kind 'shell'"),
                            ({"computation": {**data["computation"], "dtype": "float16"}}, "dtype 'float16'"),
                            ({"computation": {**data["computation"], "chunk_pixels": "64"}}, "chunk_pixels: '64'")):
        with pytest.raises(JobError, match=re.escape(message)):
            TraceJob.from_json({**data, **change})
    with pytest.raises(JobError, match=re.escape("unknown field(s) interpret, layers, run")):
        IsolatedJob.from_json(data)  # a trace job is not an isolated run's
    with pytest.raises(JobError, match="not an object"):
        Named.from_json(["golden", "c02"])


def test_the_jobs_of_fresh_interpreters_are_named_after_this_module():
    for job, function in ((ISOLATED_RUN, isolated_job), (TRACE_RUN, trace_job)):
        module, name = job.split(":")
        assert module == function.__module__ and name == function.__name__


def test_the_job_writes_one_run_as_json(tmp_path):
    out = tmp_path / "run_B.json"
    job = TraceJob(Named("callable", f"{DATA / 'planted_ops.py'}:deterministic", dtype="float32"),
                   ("ops", "kernels"), "auto", 1, "B", str(out))
    assert trace_job(job) == {"label": f"{DATA / 'planted_ops.py'}:deterministic"}
    rec = RunLog.load(out)
    assert rec.threads == 1 and rec.label.endswith(":deterministic") and rec.counts()["op"] > 10
    assert rec.settings["fill"] == 1  # run B's fill of never-written memory
    assert {t.dtype for t in rec.results} == {"float32"}


def test_a_run_that_ends_the_process_is_an_answer_and_no_log(tmp_path):
    script = tmp_path / "quits.py"
    script.write_text("import os\nos._exit(0)\n")
    out = tmp_path / "run_A.json"
    job = TraceJob(Named("script", str(script)), ("ops",), "off", 1, "A", str(out))
    answer = trace_job(job)
    assert answer["ended"].startswith(f"{script}: run A ended without a log") and not out.exists()
    with pytest.raises(EndedWithoutLog):
        trace_run(*Named("script", str(script)).call(), 1, ("ops",))


def test_named_computations_are_labelled_and_scripts_get_their_arguments(tmp_path):
    script = tmp_path / "argv.py"
    script.write_text("import sys\nassert sys.argv[1:] == ['-x', '1'], sys.argv\n")
    call, label = Named("script", str(script), argv=("-x", "1")).call()
    assert label == str(script) and call() is None
    assert Named("module", "json.tool").call()[1] == "-m json.tool"
    assert Named("nanobragg", "-cell 30 30 30 90 90 90 -default_F 1 -detpixels 4").call()[1]
    with pytest.raises(ComputationError):
        Named("golden", "no_such_case").call()
    with pytest.raises(ComputationError, match="a script returns no outputs"):
        Named("script", str(script)).computation()
    failing = tmp_path / "fails.py"
    failing.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match="exited with status 3"):
        Named("script", str(failing)).call()[0]()


def test_the_interpreter_switch_is_set_and_cleared(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    set_interpreter("on")
    assert os.environ["TRITON_INTERPRET"] == "1"
    set_interpreter("off")
    assert "TRITON_INTERPRET" not in os.environ


TARGET = """import torch


def target(device="cpu", dtype=torch.float64):
{padding}    x = torch.linspace(0, 1, 8, dtype=dtype)
    return (x.unsqueeze(0) * {factor}).sum(0)
"""


def _target(tmp_path: Path, name: str, padding: int, factor: float) -> Path:
    path = tmp_path / name / "target.py"
    path.parent.mkdir()
    path.write_text(TARGET.format(padding="    pass\n" * padding, factor=factor))
    return path


# The fresh-interpreter traces run in the slow job (this one and the one past its time limit below): a compare job
# in a fresh interpreter is proven here by the isolated run above, trace_at's own part by its in-process twin,
# test_trace_at_hands_its_job_to_a_fresh_interpreter_and_loads_the_log
@pytest.mark.slow
def test_a_log_is_made_in_a_fresh_interpreter_with_the_given_package(tmp_path):
    path = _target(tmp_path, "a", 0, 2.0)
    rec = trace_at(Named("callable", f"{path}:target"), tmp_path / "a.json", path=(ROOT,), python=sys.executable)
    assert (tmp_path / "a.json").is_file()
    assert any(e.name == "aten.linspace.default" for e in rec.events)
    assert rec.results and rec.results[0].hash


def _traced_here(call: str, run: str = "A"):
    """What :func:`trace_at` traces in its fresh interpreter (the test above), traced in this one."""
    call, label = Named("callable", call).call()
    return trace_run(call, label, threads=1, run=run)


def test_moved_lines_are_no_divergence_but_a_changed_constant_is(tmp_path):
    old = _traced_here(f"{_target(tmp_path, 'a', 0, 2.0)}:target")
    moved = _traced_here(f"{_target(tmp_path, 'b', 3, 2.0)}:target")
    changed = _traced_here(f"{_target(tmp_path, 'c', 0, 2.5)}:target", run="B")
    assert old.events[0].where != moved.events[0].where  # the line numbers differ ...
    assert not compare_commits(old, moved).diverged  # ... and that alone is no change
    report = compare_commits(old, changed)
    assert report.first.role == "culprit" and report.first.name == "aten.mul.Tensor"
    assert report.first.scalars == {"other": ["2.0", "2.5"]}


@pytest.mark.slow  # its in-process twin: test_trace_at_hands_its_job_to_a_fresh_interpreter_and_loads_the_log
def test_a_trace_past_its_time_limit_or_ending_its_process_is_one_line(tmp_path):
    path = tmp_path / "slow.py"
    path.write_text("import os, time\n\n\ndef target():\n    time.sleep(30)\n\n\ndef quits():\n    os._exit(0)\n")
    with pytest.raises(TracingError, match=rf"^tracing at {re.escape(str(ROOT))} ran past 1 s$"):
        trace_at(Named("callable", f"{path}:target"), tmp_path / "s.json", path=(ROOT,), timeout=1)
    with pytest.raises(TracingError, match=r"run A ended without a log: the computation called os._exit\(0\)"):
        trace_at(Named("callable", f"{path}:quits"), tmp_path / "q.json", layers=("ops",))


def test_trace_at_hands_its_job_to_a_fresh_interpreter_and_loads_the_log(tmp_path, monkeypatch):
    """:func:`trace_at` with the fresh interpreter (:func:`run_job`, whose own time limit and job round trip
    tests/track/base/test_base_fresh.py proves) replaced by the job it would run, :func:`trace_job`, here: the
    in-process twin of the slow job's two fresh-interpreter traces above."""
    asked = []

    def here(entry, job, **how):
        asked.append(dict(how, entry=entry))
        return Finished(0, b"", b"", 0.0, result=trace_job(TraceJob.from_json(json.loads(json.dumps(job.to_json())))))

    monkeypatch.setattr("detsim.track.compare.runs.run_job", here)
    path = _target(tmp_path, "a", 0, 2.0)
    rec = trace_at(Named("callable", f"{path}:target"), tmp_path / "a.json", path=(ROOT,), python=sys.executable,
                   timeout=1)
    assert (tmp_path / "a.json").is_file()
    assert any(e.name == "aten.linspace.default" for e in rec.events)
    assert rec.results and rec.results[0].hash
    assert asked[0]["entry"] == TRACE_RUN and asked[0]["path"] == (ROOT,) and asked[0]["python"] == sys.executable
    assert (asked[0]["timeout"], asked[0]["what"]) == (1, f"tracing at {ROOT}")
    quits = tmp_path / "quits.py"
    quits.write_text("import os\nos._exit(0)\n")
    with pytest.raises(TracingError, match=rf"^{re.escape(str(quits))}: run A ended without a log"):
        trace_at(Named("script", str(quits)), tmp_path / "q.json", layers=("ops",))
    assert not (tmp_path / "q.json").exists()

    def past_its_limit(entry, job, **how):
        raise TimedOut(f"{how['what']} ran past {how['timeout']:g} s")

    monkeypatch.setattr("detsim.track.compare.runs.run_job", past_its_limit)
    with pytest.raises(TracingError, match=rf"^tracing at {re.escape(str(ROOT))} ran past 1 s$"):
        trace_at(Named("callable", f"{path}:target"), tmp_path / "s.json", path=(ROOT,), timeout=1)
