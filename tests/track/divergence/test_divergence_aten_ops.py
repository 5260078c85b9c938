"""divergence.aten_ops: each aten op is one event; never-written memory is filled, counted and left out of hashes."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from detsim.track.divergence.recorder import record

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402


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
