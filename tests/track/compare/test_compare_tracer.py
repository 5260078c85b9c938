"""compare.tracer: the Tracer's layers, its exclusivity, aten ops recorded with their tensors hashed; planted
Triton scenarios under the interpreter, and the GPU wrappers with stand-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from detsim.track.compare.firstdiff import compare_logs
from detsim.track.compare.tracer import Tracer, grid_list, inductor_launch, jit_launch, trace

DATA = Path(__file__).resolve().parents[2] / "data"
REPO = DATA.parent.parent
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402
from markers import marked_line  # noqa: E402


def test_record_fingerprints_inputs_and_nested_results(dtype):
    def step(x, *, scale):
        return {"image": x * scale, "parts": [x.sum(), (x + 1).max()]}

    x = torch.arange(3, dtype=dtype)
    rec = trace(step, x, scale=torch.tensor(2.0, dtype=dtype), label="step")
    assert rec.label == "step" and rec.error is None and rec.threads == torch.get_num_threads()
    assert [t.name for t in rec.inputs] == ["arg0", "scale"]
    assert [t.name for t in rec.results] == ["result.image", "result.parts[0]", "result.parts[1]"]
    assert [e.name for e in rec.events] == ["aten.mul.Tensor", "aten.sum.default", "aten.add.Tensor",
                                            "aten.max.default"]
    assert [e.index for e in rec.events] == [0, 1, 2, 3]
    assert rec.settings == {"ops": True, "kernels": True, "fill": 0,
                            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


def test_an_exception_is_kept_in_the_record():
    def fails():
        torch.ones(2).sum()
        raise ValueError("planted")

    rec = trace(fails)
    assert rec.error.rstrip().endswith("ValueError: planted") and len(rec.events) == 2 and rec.results == []


def test_layers_that_are_off_record_nothing():
    rec = trace(lambda: torch.ones(2) * 2, ops=False, kernels=False)
    assert rec.events == [] and len(rec.results) == 1


def test_paused_ops_are_not_traced_and_only_one_tracer_runs_at_a_time():
    tracer = Tracer("outer")
    with tracer:
        torch.ones(1)
        with tracer.paused():
            assert tracer.is_paused
            torch.zeros(1)
        assert not tracer.is_paused
        with pytest.raises(RuntimeError, match="already active"):
            with Tracer("inner"):
                pass
    assert [e.name for e in tracer.log.events] == ["aten.ones.default"]
    with Tracer("next", kernels=False):  # the first one let go
        pass


def test_exit_undoes_what_was_registered_last_first():
    undone = []
    with Tracer("r", ops=False, kernels=False) as tracer:
        tracer.on_exit(lambda: undone.append("first"))
        tracer.on_exit(lambda: undone.append("second"))
    assert undone == ["second", "first"]
    event = tracer.add(kind="op", name="x", where="", inputs=[], outputs=[])
    assert event.index == 0 and tracer.log.events == [event]


def test_empty_buffers_are_counted_as_never_written_and_overwritten_ones_are_not_compared():
    rec = trace(planted_ops.deterministic)
    by_name = {}
    for event in rec.events:
        by_name.setdefault(event.name, event)
    empty = by_name["aten.empty.memory_format"].outputs[0]
    assert (empty.unwritten, empty.note) == (64, "never written (empty)")
    copy = by_name["aten.copy_.default"]
    assert [(t.name, t.compare) for t in copy.inputs] == [("self", False), ("src", True)]
    assert any(e.where.startswith("backward ") for e in rec.events)
    out_op = by_name["aten.mul.out"]
    assert "out" not in {t.name for t in out_op.inputs}


def test_an_op_event_names_its_tensors_by_schema_and_keeps_python_values_as_text(dtype):
    def step(x):
        return torch.clamp(x, min=0.25) + torch.cat([x, x]).sum()

    (clamp, cat, total, add) = trace(step, torch.linspace(0, 1, 5, dtype=dtype)).events
    assert (clamp.name, [t.name for t in clamp.inputs], clamp.scalars) == (
        "aten.clamp.default", ["self"], {"min": "0.25"})
    assert [t.name for t in cat.inputs] == ["tensors[0]", "tensors[1]"] and cat.outputs[0].shape == [10]
    assert total.name == "aten.sum.default" and add.name == "aten.add.Tensor"
    assert all(t.dtype == str(dtype).replace("torch.", "") for e in (clamp, add) for t in e.outputs)
    assert clamp.where.endswith("in step")


def test_an_empty_buffer_is_compared_once_written_and_metadata_reads_are_not_hashed():
    def step():
        buf = torch.empty(3)
        like = torch.zeros_like(buf)
        buf.fill_(1.0)
        return buf + like

    empty, zeros_like, fill, add = trace(step).events
    assert empty.outputs[0].note == "never written (empty)" and empty.outputs[0].unwritten == 3
    assert zeros_like.inputs[0].hash is None and zeros_like.inputs[0].note == "metadata only"
    assert fill.inputs[0].note == "overwritten by the op" and fill.outputs[0].unwritten == 0
    assert [(t.compare, t.unwritten) for t in add.inputs] == [(True, 0), (True, 0)]


def test_a_read_of_never_written_elements_is_noted_with_the_op_that_allocated_them():
    def step():
        buf = torch.empty(4)
        buf[:3] = 1.0
        return buf * 2

    rec = trace(step)
    mul = rec.events[-1]
    assert (mul.name, mul.inputs[0].unwritten, mul.outputs[0].unwritten) == ("aten.mul.Tensor", 1, 0)
    assert mul.inputs[0].note.startswith("1 never-written element(s) (allocated by #0 aten.empty.memory_format at ")
    assert rec.events[1].view and not mul.view  # the slice that was written moves no data


def test_a_python_value_an_op_returns_is_kept():
    rec = trace(lambda: torch.tensor(3.5).item())
    assert rec.events[-1].name == "aten._local_scalar_dense.default" and rec.events[-1].scalars["result"] == "3.5"


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
    tracer = Tracer("gpu", ops=False, kernels=False)
    jit_launch(tracer, launch, fn, x, torch.empty(8), 8, grid=lambda meta: (8 // meta["BLOCK"],), warmup=False,
               BLOCK=4)
    (event,) = tracer.log.events
    assert (event.kind, event.name, event.grid, event.config, event.scalars) == (
        "kernel", "double_kernel", [2, 1, 1], {"BLOCK": "4"}, {"n": "8"})
    assert [(t.name, t.compare) for t in event.inputs] == [("x_ptr", True), ("out_ptr", False)]
    assert [(t.name, t.written) for t in event.outputs] == [("x_ptr", False), ("out_ptr", True)]

    records = []
    for block, scale in ((4, 1.0), (2, 1.0 + 2**-20)):
        tracer = Tracer("inductor", ops=False, kernels=False)
        tuner, original = _inductor_stand_in(block, scale)
        inductor_launch(tracer, original, tuner, x.clone(), torch.empty(1), 8, stream=0)
        records.append(tracer.log)
    event = records[1].events[0]
    assert [t.name for t in event.inputs] == ["in_ptr0", "out_ptr0"] and event.scalars == {"xnumel": "8"}
    assert event.config == {"XBLOCK": "2", "num_warps": 2, "num_stages": 1} and event.grid == [4, 1, 1]
    culprit = compare_logs(*records).first
    assert (culprit.role, culprit.name, culprit.tensor) == ("culprit", "triton_red_fused_sum_0", "out_ptr0")
    assert culprit.grid_a == [2, 1, 1] and "torch._inductor.config.deterministic = True" in culprit.fix
    records[1].events[0].grid, records[1].events[0].config = records[0].events[0].grid, records[0].events[0].config
    culprit = compare_logs(*records).first
    assert "force_filter_reduction_configs" in culprit.fix and "reduction" in culprit.reason


def test_warm_up_and_benchmark_launches_are_not_recorded():
    tracer = Tracer("gpu", ops=False, kernels=False)
    ran = []
    jit_launch(tracer, lambda fn, *a, **kw: ran.append("warmup"), SimpleNamespace(), grid=(1,), warmup=True)
    tuner, original = _inductor_stand_in(4, 1.0)
    inductor_launch(tracer, original, tuner, torch.ones(8), torch.empty(1), 8, stream=0, benchmark_run=True)
    assert ran == ["warmup"] and tracer.log.events == []


def test_grid_list_pads_to_three_dimensions():
    assert grid_list((4,)) == [4, 1, 1] and grid_list([2, 3, 5]) == [2, 3, 5]
    assert grid_list(None) is None and grid_list("<grid callable failed: x>") == ["<grid callable failed: x>"]
