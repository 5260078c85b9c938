"""compare.diagnosis: the reason and the knob for each kind of culprit and divergence."""

from __future__ import annotations

from detsim.track.compare.diagnosis import base_name, explain, leak_text, operands_text, uninitialized_text
from detsim.track.compare.record import Event, TensorInfo


def op(name: str, inputs=()) -> Event:
    return Event(0, "op", name, "model.py:1 in step", list(inputs), [])


def test_explain_names_the_knob_for_each_kind_of_culprit():
    rand = op("aten.rand.default")
    assert "manual_seed" in explain(rand, rand, {}, False, "cpu")[1]
    add = op("aten.add.Tensor")
    assert "set_num_threads" in explain(add, add, {}, True, "cpu")[1]
    assert "use_deterministic_algorithms" in explain(add, add, {}, False, "cuda")[1]
    assert "`alpha`: 1 vs 2" in explain(add, add, {"alpha": ["1", "2"]}, False, "cpu")[0]
    custom = op("planted.drift.default")
    assert "custom op (planted)" in explain(custom, custom, {}, False, "cpu")[0]


def test_a_kernel_whose_write_only_argument_held_never_written_memory_mentions_it():
    out = TensorInfo("out_ptr", "a" * 64, [4], "float32", "cpu", compare=False, unwritten=4)
    kernel = Event(0, "kernel", "my_kernel", "", [out], [])
    assert "never-written contents of `out_ptr`" in explain(kernel, kernel, {}, False, "cpu")[0]


def test_the_other_findings_have_their_own_texts():
    assert "fill_uninitialized_memory" in uninitialized_text("self")[1]
    reason, fix = leak_text("other", {"index": 4, "name": "aten.lerp_.Scalar"}, True)
    assert "run A's #4 aten.lerp_.Scalar left it (in place)" in reason and "clone" in fix
    assert "sorted(" in operands_text("self")[1]
    assert base_name("aten.add_.Tensor") == "add_" and base_name("my_kernel") == "my_kernel"
