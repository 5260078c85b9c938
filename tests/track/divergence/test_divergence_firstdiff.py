"""divergence.firstdiff: culprits, victims, paths and results, on hand-made records."""

from __future__ import annotations

from detsim.track.base.exitcodes import ExitCode
from detsim.track.divergence.firstdiff import compare_records, explain
from detsim.track.divergence.records import Event, Record, TensorInfo


def info(name: str, content: str, **kw) -> TensorInfo:
    return TensorInfo(name, content * 64, [4], "float64", "cpu", **kw)


def op(index: int, name: str, inputs, outputs, **kw) -> Event:
    return Event(index, "op", name, f"model.py:{10 + index} in step", inputs, outputs, **kw)


def records(events_a, events_b, results_a=(), results_b=(), threads=(1, 1)) -> tuple[Record, Record]:
    return (Record("run", events=list(events_a), results=list(results_a), threads=threads[0]),
            Record("run", events=list(events_b), results=list(results_b), threads=threads[1]))


def test_the_first_op_with_equal_inputs_and_different_outputs_is_the_culprit_and_its_consumer_a_victim():
    a, b = records(
        [op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")]),
         op(1, "aten.add.Tensor", [info("self", "b")], [info("out", "c")])],
        [op(0, "aten.exp.default", [info("self", "a")], [info("out", "d")]),
         op(1, "aten.add.Tensor", [info("self", "d")], [info("out", "e")])],
        [info("result", "c")], [info("result", "e")])
    report = compare_records(a, b)
    culprit, (victim,) = report.first, report.victims
    assert (culprit.role, culprit.index, culprit.tensor) == ("culprit", 0, "out")
    assert (victim.role, victim.index, victim.producer["index"]) == ("victim", 1, 0)
    assert report.result_differences == [{"name": "result", "hash_a": "c" * 64, "hash_b": "e" * 64}]
    assert report.exit_code() is ExitCode.REGRESSED
    assert "FIRST DIVERGENCE" in report.render() and report.to_dict()["diverged"] is True


def test_a_different_sequence_is_a_path_divergence():
    same = op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")])
    a, b = records([same, op(1, "aten.sin.default", [], [])], [same, op(1, "aten.cos.default", [], [])])
    first = compare_records(a, b).first
    assert (first.role, first.index, first.name) == ("path", 1, "aten.cos.default")
    a, b = records([same], [same, op(1, "aten.cos.default", [], [])])
    first = compare_records(a, b).first
    assert first.role == "path" and "run B goes on with 1 more event(s)" in first.reason


def test_different_inputs_are_named_before_any_event():
    a, b = records([], [])
    a.inputs, b.inputs = [info("arg0", "a")], [info("arg0", "b")]
    report = compare_records(a, b)
    assert report.first.role == "inputs" and report.verdict().startswith("DIVERGED before the first event")
    assert any("no op or kernel was recorded" in note for note in report.notes)


def test_identical_records_do_not_diverge_and_errors_make_them_unmeasured():
    event = op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")])
    a, b = records([event], [event], [info("r", "b")], [info("r", "b")])
    report = compare_records(a, b)
    assert report.first is None and report.exit_code() is ExitCode.OK
    assert report.verdict() == ("NO DIVERGENCE: 1 events (1 ops, 0 kernels) with identical inputs and outputs; "
                                "1 result tensor(s) identical")
    b.error = "Traceback ...\nValueError: boom"
    report = compare_records(a, b)
    assert report.exit_code() is ExitCode.UNMEASURED and "ERROR    run B raised: ValueError: boom" in report.render()


def test_uncompared_outputs_and_launch_changes_with_equal_outputs_are_not_culprits():
    a, b = records([op(0, "aten.empty.memory_format", [], [info("out", "a", compare=False)])],
                   [op(0, "aten.empty.memory_format", [], [info("out", "b", compare=False)])])
    assert compare_records(a, b).first is None
    kernel_a = Event(0, "kernel", "k", "", [], [info("out", "a")], grid=[1, 1, 1])
    kernel_b = Event(0, "kernel", "k", "", [], [info("out", "a")], grid=[2, 1, 1])
    report = compare_records(*records([kernel_a], [kernel_b]))
    assert report.first is None and "launch configuration differs" in report.notes[0]


def test_explain_names_the_knob_for_each_kind_of_culprit():
    rand = op(0, "aten.rand.default", [], [])
    assert "manual_seed" in explain(rand, rand, {}, False, "cpu")[1]
    add = op(0, "aten.add.Tensor", [], [])
    assert "set_num_threads" in explain(add, add, {}, True, "cpu")[1]
    assert "use_deterministic_algorithms" in explain(add, add, {}, False, "cuda")[1]
    assert "`alpha`: 1 vs 2" in explain(add, add, {"alpha": ["1", "2"]}, False, "cpu")[0]
    custom = op(0, "planted.drift.default", [], [])
    assert "custom op (planted)" in explain(custom, custom, {}, False, "cpu")[0]
    unread = op(0, "aten.add.Tensor", [info("self", "a", compare=False, note="uninitialised memory (from #0)")], [])
    assert "never written" in explain(unread, unread, {}, False, "cpu")[0]
