"""compare.triton_hooks: planted Triton scenarios under the interpreter, and the GPU wrappers with stand-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from detsim.track.compare.firstdiff import compare_records
from detsim.track.compare.recorder import Recorder
from detsim.track.compare.triton_hooks import grid_list, inductor_launch, jit_launch

DATA = Path(__file__).resolve().parents[2] / "data"
REPO = DATA.parent.parent
sys.path.insert(0, str(DATA))
from markers import marked_line  # noqa: E402


@pytest.fixture(scope="module")
def triton_reports():
    pytest.importorskip("triton")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(DATA / "triton_scenarios.py")], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_triton_kernel_reading_a_changing_value_is_the_culprit(triton_reports):
    report = triton_reports["stale_read"]
    culprit = report["first"]
    assert (culprit["role"], culprit["kind"], culprit["name"]) == ("culprit", "kernel", "stale_read_kernel")
    assert culprit["tensor"] == "out_ptr" and culprit["grid_a"] == culprit["grid_b"] == [1, 1, 1]
    assert culprit["where"].endswith(marked_line(DATA / "planted_triton.py", "stale_read", "culprit"))
    kernel_victim, op_victim = report["victims"][:2]
    assert (kernel_victim["kind"], kernel_victim["name"], kernel_victim["tensor"]) == ("kernel", "scale_kernel", "x_ptr")
    assert kernel_victim["producer"]["index"] == culprit["index"]
    assert kernel_victim["where"].endswith(marked_line(DATA / "planted_triton.py", "stale_read", "victim"))
    assert op_victim["name"] == "aten.sqrt.default" and op_victim["root"]["name"] == "stale_read_kernel"
    assert report["culprit_count"] == 1


def test_triton_grid_change_is_reported_as_autotuning(triton_reports):
    culprit = triton_reports["retuned_sum"]["first"]
    assert (culprit["role"], culprit["name"]) == ("culprit", "block_sum_kernel")
    assert culprit["grid_a"] == [4, 1, 1] and culprit["grid_b"] == [16, 1, 1]
    assert culprit["config_a"] == {"BLOCK": "64"} and culprit["config_b"] == {"BLOCK": "16"}
    assert "autotuning" in culprit["reason"] and "pin the configuration" in culprit["fix"]


def test_deterministic_triton_kernels_have_no_divergence(triton_reports):
    report = triton_reports["steady"]
    assert report["first"] is None and report["diverged"] is False and report["counts"]["kernel"] == 1
    engine = triton_reports["detsim_triton"]
    if engine is None:
        pytest.skip("detsim.rendering.engine has no triton mode")
    assert engine["diverged"] is False and engine["counts"]["kernel"] >= 1


def test_a_kernel_output_padded_to_a_power_of_two_is_no_divergence(triton_reports):
    """The tail of the padded buffer is never written and never used: no false culprit at the kernel."""
    report = triton_reports["padded_output"]
    assert report["first"] is None and report["diverged"] is False and report["counts"]["kernel"] == 1
    assert report["results_compared"] == 1 and report["result_differences"] == []


def test_a_kernel_reading_the_never_written_tail_reads_uninitialized_memory(triton_reports):
    report = triton_reports["unmasked_total"]
    first = report["first"]
    assert (first["role"], first["kind"], first["name"]) == ("uninitialized", "kernel", "block_total_kernel")
    assert first["where"].endswith(marked_line(DATA / "planted_triton.py", "unmasked_total", "reads garbage"))
    assert first["reads"]["name"] == "x_ptr" and first["reads"]["count"] == 16
    assert report["verdict"] == "DIVERGED at #5: kernel block_total_kernel reads uninitialized memory (`x_ptr`)"
    assert report["victims"][0]["root"]["name"] == "block_total_kernel"


def _inductor_stand_in(block: int, scale: float):
    """A stand-in for Inductor's CachingAutotuner (the GPU path cannot run here)."""
    config = SimpleNamespace(kwargs={"XBLOCK": block}, num_warps=2, num_stages=1)
    tuner = SimpleNamespace(fn=SimpleNamespace(__name__="triton_red_fused_sum_0"),
                            triton_meta={"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32",
                                                       "XBLOCK": "constexpr"}},
                            configs=[config], launchers=[SimpleNamespace(config=config)],
                            _interpret_args_grid=lambda args, cfg: (args, (8 // cfg.kwargs["XBLOCK"], 1, 1)))

    def original(tuner, x, out, n, *, stream, benchmark_run):
        out.copy_(x.sum() * scale)

    return tuner, original


def test_gpu_launch_wrappers_with_stand_ins():
    """JITFunction.run and CachingAutotuner.run wrappers: names, grids, configs and the knobs they lead to."""
    fn = SimpleNamespace(__name__="double_kernel", arg_names=["x_ptr", "out_ptr", "n", "BLOCK"],
                         params=[SimpleNamespace(name=n, is_constexpr=n == "BLOCK")
                                 for n in ("x_ptr", "out_ptr", "n", "BLOCK")])

    def launch(fn, x, out, n, *, grid, warmup, BLOCK):
        out.copy_(x * 2)

    x = torch.arange(8, dtype=torch.float32)
    recorder = Recorder("gpu", ops=False, kernels=False)
    jit_launch(recorder, launch, fn, x, torch.empty(8), 8, grid=lambda meta: (8 // meta["BLOCK"],), warmup=False,
               BLOCK=4)
    (event,) = recorder.record.events
    assert (event.kind, event.name, event.grid, event.config, event.scalars) == (
        "kernel", "double_kernel", [2, 1, 1], {"BLOCK": "4"}, {"n": "8"})
    assert [(t.name, t.compare) for t in event.inputs] == [("x_ptr", True), ("out_ptr", False)]
    assert [(t.name, t.written) for t in event.outputs] == [("x_ptr", False), ("out_ptr", True)]

    records = []
    for block, scale in ((4, 1.0), (2, 1.0 + 2**-20)):
        recorder = Recorder("inductor", ops=False, kernels=False)
        tuner, original = _inductor_stand_in(block, scale)
        inductor_launch(recorder, original, tuner, x.clone(), torch.empty(1), 8, stream=0)
        records.append(recorder.record)
    event = records[1].events[0]
    assert [t.name for t in event.inputs] == ["in_ptr0", "out_ptr0"] and event.scalars == {"xnumel": "8"}
    assert event.config == {"XBLOCK": "2", "num_warps": 2, "num_stages": 1} and event.grid == [4, 1, 1]
    culprit = compare_records(*records).first
    assert (culprit.role, culprit.name, culprit.tensor) == ("culprit", "triton_red_fused_sum_0", "out_ptr0")
    assert culprit.grid_a == [2, 1, 1] and "torch._inductor.config.deterministic = True" in culprit.fix
    records[1].events[0].grid, records[1].events[0].config = records[0].events[0].grid, records[0].events[0].config
    culprit = compare_records(*records).first
    assert "force_filter_reduction_configs" in culprit.fix and "reduction" in culprit.reason


def test_warm_up_and_benchmark_launches_are_not_recorded():
    recorder = Recorder("gpu", ops=False, kernels=False)
    ran = []
    jit_launch(recorder, lambda fn, *a, **kw: ran.append("warmup"), SimpleNamespace(), grid=(1,), warmup=True)
    tuner, original = _inductor_stand_in(4, 1.0)
    inductor_launch(recorder, original, tuner, torch.ones(8), torch.empty(1), 8, stream=0, benchmark_run=True)
    assert ran == ["warmup"] and recorder.record.events == []


def test_grid_list_pads_to_three_dimensions():
    assert grid_list((4,)) == [4, 1, 1] and grid_list([2, 3, 5]) == [2, 3, 5]
    assert grid_list(None) is None and grid_list("<grid callable failed: x>") == ["<grid callable failed: x>"]
