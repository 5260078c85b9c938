"""compare.recorder: the Recorder's layers, its exclusivity, and aten ops recorded with their tensors hashed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from detsim.track.compare.recorder import Recorder, record

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402


def test_record_fingerprints_inputs_and_nested_results(dtype):
    def step(x, *, scale):
        return {"image": x * scale, "parts": [x.sum(), (x + 1).max()]}

    x = torch.arange(3, dtype=dtype)
    rec = record(step, x, scale=torch.tensor(2.0, dtype=dtype), label="step")
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

    rec = record(fails)
    assert rec.error.rstrip().endswith("ValueError: planted") and len(rec.events) == 2 and rec.results == []


def test_layers_that_are_off_record_nothing():
    rec = record(lambda: torch.ones(2) * 2, ops=False, kernels=False)
    assert rec.events == [] and len(rec.results) == 1


def test_paused_ops_are_not_recorded_and_only_one_recorder_runs_at_a_time():
    recorder = Recorder("outer")
    with recorder:
        torch.ones(1)
        with recorder.paused():
            assert recorder.is_paused
            torch.zeros(1)
        assert not recorder.is_paused
        with pytest.raises(RuntimeError, match="already active"):
            with Recorder("inner"):
                pass
    assert [e.name for e in recorder.record.events] == ["aten.ones.default"]
    with Recorder("next", kernels=False):  # the first one let go
        pass


def test_exit_undoes_what_was_registered_last_first():
    undone = []
    with Recorder("r", ops=False, kernels=False) as recorder:
        recorder.on_exit(lambda: undone.append("first"))
        recorder.on_exit(lambda: undone.append("second"))
    assert undone == ["second", "first"]
    event = recorder.add(kind="op", name="x", where="", inputs=[], outputs=[])
    assert event.index == 0 and recorder.record.events == [event]


def test_empty_buffers_are_counted_as_never_written_and_overwritten_ones_are_not_compared():
    rec = record(planted_ops.deterministic)
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

    (clamp, cat, total, add) = record(step, torch.linspace(0, 1, 5, dtype=dtype)).events
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

    empty, zeros_like, fill, add = record(step).events
    assert empty.outputs[0].note == "never written (empty)" and empty.outputs[0].unwritten == 3
    assert zeros_like.inputs[0].hash is None and zeros_like.inputs[0].note == "metadata only"
    assert fill.inputs[0].note == "overwritten by the op" and fill.outputs[0].unwritten == 0
    assert [(t.compare, t.unwritten) for t in add.inputs] == [(True, 0), (True, 0)]


def test_a_read_of_never_written_elements_is_noted_with_the_op_that_allocated_them():
    def step():
        buf = torch.empty(4)
        buf[:3] = 1.0
        return buf * 2

    rec = record(step)
    mul = rec.events[-1]
    assert (mul.name, mul.inputs[0].unwritten, mul.outputs[0].unwritten) == ("aten.mul.Tensor", 1, 0)
    assert mul.inputs[0].note.startswith("1 never-written element(s) (allocated by #0 aten.empty.memory_format at ")
    assert rec.events[1].view and not mul.view  # the slice that was written moves no data


def test_a_python_value_an_op_returns_is_kept():
    rec = record(lambda: torch.tensor(3.5).item())
    assert rec.events[-1].name == "aten._local_scalar_dense.default" and rec.events[-1].scalars["result"] == "3.5"
