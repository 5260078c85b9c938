"""compare.divergences: how each kind of divergence reads, the comparison's verdicts and exit codes, and the
reason and the knob for each kind of culprit and divergence."""

from __future__ import annotations

from detsim.track.base.exitcodes import ExitCode
from detsim.track.compare.divergences import (Divergence, RunComparison, base_name, explain, leak_text,
                                              operands_text, ref_text, uninitialized_text)
from detsim.track.compare.run_log import Event, TensorInfo


def report(**kw) -> RunComparison:
    return RunComparison("run", 1, 1, {"op": 1, "kernel": 0}, (1, 1), **kw)


def ref(index: int, name: str, where: str, role: str) -> dict:
    return {"index": index, "kind": "op", "name": name, "where": where, "role": role}


def test_a_leak_reads_state_written_by_run_a_at_one_line_read_by_run_b_at_another():
    leak = Divergence("leak", 2, "op", "aten.sub.Tensor", "m.py:5 in f", tensor="other", hash_a="a" * 64, hash_b="b" * 64,
                   producer_a=ref(4, "aten.lerp_.Scalar", "m.py:6 in f", "run A, in place"))
    r = report()
    r.add(leak, 3)
    assert r.verdict() == "DIVERGED at #2: state written by run A at m.py:6 in f is read by run B at m.py:5 in f"
    assert leak.lines()[0] == "STATE LEAK: #2 op aten.sub.Tensor at m.py:5 in f"
    assert "  written by run A: #4 op aten.lerp_.Scalar at m.py:6 in f (run A, in place)" in leak.lines()
    assert r.culprit_count == 1 and r.exit_code() is ExitCode.REGRESSED


def test_uninitialized_operands_and_path_findings_read_as_their_kind():
    read = Divergence("uninitialized", 3, "op", "aten.add_.Tensor", "m.py:9 in f", tensor="out", hash_a="c" * 64,
                   hash_b="c" * 64, reads={"name": "self", "count": 8, "note": "8 never-written element(s)"})
    assert read.lines()[0].startswith("READS UNINITIALIZED MEMORY: #3")
    assert "  reads `self`: 8 never-written element(s)" in read.lines()
    assert "in both runs where written; it holds never-written elements" in read.lines()[1]
    operands = Divergence("operands", 7, "op", "aten.add.Tensor", "m.py:12 in f", tensor="self",
                       producer_a=ref(3, "aten.mul.Tensor", "m.py:10 in f", "identical in both runs"),
                       producer=ref(5, "aten.mul.Tensor", "m.py:10 in f", "identical in both runs"))
    assert "  run A passed #3 op aten.mul.Tensor at m.py:10 in f (identical in both runs)" in operands.lines()
    path = Divergence("path", 1, "op", "aten.mul.Tensor", "m.py:20 in f", where_a="m.py:18 in f", reason="branch")
    r = report()
    r.add(path, 3)
    assert r.verdict() == "DIVERGED at #1: the runs took different paths (A at m.py:18 in f, B at m.py:20 in f)"
    assert ref_text(None) == "?" and ref_text({"index": None, "name": "the input `x`"}) == "the input `x`"


def test_nothing_recorded_and_nothing_returned_is_unmeasured():
    empty = RunComparison("f", 0, 0, {"op": 0, "kernel": 0}, (1, 1))
    assert empty.nothing_traced and empty.exit_code() is ExitCode.UNMEASURED
    assert empty.verdict().startswith("NOTHING TO COMPARE: the computation produced no tensor output and recorded no")
    returned = RunComparison("f", 0, 0, {"op": 0, "kernel": 0}, (1, 1), results_compared=1)
    assert not returned.nothing_traced and returned.exit_code() is ExitCode.OK


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
